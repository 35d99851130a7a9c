package main

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

type kubeletEnv struct {
	*testEnv
	k       *Kubelet
	workdir string
}

func newTestKubelet(t *testing.T, objs ...runtime.Object) *kubeletEnv {
	t.Helper()
	runner := requireSandbox(t)
	env := newTestEnv(t, objs...)
	workdir := t.TempDir()
	k := NewKubelet(KubeletConfig{
		Client: env.client, Factory: env.factory, Nodes: testNodes, Workdir: workdir,
		Faults: env.faults, Runner: runner, Recorder: env.recorder, Log: env.log,
		APIServer: "https://127.0.0.1:6443",
	})
	env.start(t)
	go k.Run(env.ctx)
	t.Cleanup(func() {
		k.Shutdown()
		runner.KillAll(time.Second)
	})
	return &kubeletEnv{testEnv: env, k: k, workdir: workdir}
}

func (e *kubeletEnv) pod(t *testing.T, name string) *v1.Pod {
	t.Helper()
	p, err := e.client.CoreV1().Pods("default").Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (e *kubeletEnv) waitPhase(t *testing.T, name string, phase v1.PodPhase) *v1.Pod {
	t.Helper()
	var p *v1.Pod
	eventually(t, 20*time.Second, "pod "+name+" phase "+string(phase), func() bool {
		p = e.pod(t, name)
		return p.Status.Phase == phase
	})
	return p
}

func (e *kubeletEnv) podLog(name, container string) string {
	b, _ := os.ReadFile(filepath.Join(e.workdir, "pods", "default_"+name, container+".log"))
	return string(b)
}

func simPod(name string, policy v1.RestartPolicy, command ...string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: k8stypes.UID("uid-" + name)},
		Spec: v1.PodSpec{
			NodeName:      "sim-node-0",
			RestartPolicy: policy,
			Containers:    []v1.Container{{Name: "main", Image: "busybox", Command: command}},
		},
		Status: v1.PodStatus{Phase: v1.PodPending},
	}
}

func boundClaim(name, dir string) (*v1.PersistentVolumeClaim, *v1.PersistentVolume) {
	pvc := &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: k8stypes.UID("pvc-uid-" + name)},
		Spec:       v1.PersistentVolumeClaimSpec{VolumeName: "pv-" + name},
		Status:     v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound},
	}
	pv := &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pv-" + name},
		Spec: v1.PersistentVolumeSpec{
			Capacity:               v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")},
			ClaimRef:               &v1.ObjectReference{Namespace: "default", Name: name, UID: pvc.UID},
			PersistentVolumeSource: v1.PersistentVolumeSource{HostPath: &v1.HostPathVolumeSource{Path: dir}},
		},
	}
	return pvc, pv
}

func TestKubeletRunsJobPodWithVolumes(t *testing.T) {
	pvDir := t.TempDir()
	pvc, pv := boundClaim("data", pvDir)
	cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "default"}, Data: map[string]string{"key": "from-configmap"}}
	pod := simPod("job-1", v1.RestartPolicyNever, "/bin/sh", "-c",
		`cat /cfg/key > /data/copy && echo "$POD_NAME on $NODE" && ls /scratch && echo "all good" > /dev/termination-log`)
	pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "j", UID: "j"}}
	pod.Spec.Volumes = []v1.Volume{
		{Name: "data", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}},
		{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}},
		{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
	}
	pod.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/data"}, {Name: "cfg", MountPath: "/cfg"}, {Name: "scratch", MountPath: "/scratch"}}
	pod.Spec.Containers[0].Env = []v1.EnvVar{
		{Name: "POD_NAME", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		{Name: "NODE", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
	}
	e := newTestKubelet(t, pvc, pv, cm, pod)

	got := e.waitPhase(t, "job-1", v1.PodSucceeded)
	cs := got.Status.ContainerStatuses
	if len(cs) != 1 || cs[0].State.Terminated == nil {
		t.Fatalf("container statuses: %+v", cs)
	}
	term := cs[0].State.Terminated
	if term.ExitCode != 0 || term.Reason != "Completed" || term.Message != "all good\n" || term.StartedAt.IsZero() {
		t.Errorf("terminated = %+v", term)
	}
	if b, err := os.ReadFile(filepath.Join(pvDir, "copy")); err != nil || string(b) != "from-configmap" {
		t.Errorf("PV content = %q, %v", b, err)
	}
	if log := e.podLog("job-1", "main"); log != "job-1 on sim-node-0\n" {
		t.Errorf("log = %q", log)
	}
	if got.Status.PodIP == "" || got.Status.HostIP != NodeIP || got.Status.StartTime == nil {
		t.Errorf("status IPs/start: %+v", got.Status)
	}
	if c := findPodCondition(got.Status.Conditions, v1.PodReady); c == nil || c.Status != v1.ConditionFalse || c.Reason != "PodCompleted" {
		t.Errorf("Ready condition = %+v", c)
	}
	if c := findPodCondition(got.Status.Conditions, v1.PodInitialized); c == nil || c.Status != v1.ConditionTrue {
		t.Errorf("Initialized condition = %+v", c)
	}
}

func TestKubeletFailedPodFallsBackToLogs(t *testing.T) {
	pod := simPod("fail", v1.RestartPolicyNever, "/bin/sh", "-c", "echo something broke; exit 3")
	pod.Spec.Containers[0].TerminationMessagePolicy = v1.TerminationMessageFallbackToLogsOnError
	pod.Spec.InitContainers = []v1.Container{{Name: "init", Image: "busybox", Command: []string{"/bin/sh", "-c", "echo init ran"}}}
	e := newTestKubelet(t, pod)
	got := e.waitPhase(t, "fail", v1.PodFailed)
	term := got.Status.ContainerStatuses[0].State.Terminated
	if term == nil || term.ExitCode != 3 || term.Reason != "Error" || term.Message != "something broke\n" {
		t.Errorf("terminated = %+v", term)
	}
	init := got.Status.InitContainerStatuses[0].State.Terminated
	if init == nil || init.ExitCode != 0 {
		t.Errorf("init status = %+v", got.Status.InitContainerStatuses)
	}
	if log := e.podLog("fail", "init"); log != "init ran\n" {
		t.Errorf("init log = %q", log)
	}
}

func TestKubeletInjectedJobFailure(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "ran")
	pod := simPod("job-2", v1.RestartPolicyNever, "/bin/sh", "-c", "touch "+marker)
	pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "j", UID: "j"}}
	e := newTestKubelet(t, pod, faultsCM(map[string]string{KeyFailNextJobPod: "17"}))
	got := e.waitPhase(t, "job-2", v1.PodFailed)
	term := got.Status.ContainerStatuses[0].State.Terminated
	if term == nil || term.ExitCode != 17 || term.Message != InjectedFailureMessage {
		t.Errorf("terminated = %+v", term)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the command ran despite the injected failure")
	}
	cm, _ := e.client.CoreV1().ConfigMaps(FaultsNamespace).Get(e.ctx, FaultsName, metav1.GetOptions{})
	if _, ok := cm.Data[KeyFailNextJobPod]; ok {
		t.Error("failNextJobPod not consumed")
	}
}

func TestKubeletNoCommand(t *testing.T) {
	job := simPod("nocmd", v1.RestartPolicyOnFailure)
	svc := simPod("svc", v1.RestartPolicyAlways)
	e := newTestKubelet(t, job, svc)
	got := e.waitPhase(t, "nocmd", v1.PodFailed)
	if term := got.Status.ContainerStatuses[0].State.Terminated; term == nil || term.Message != NoCommandMessage {
		t.Errorf("terminated = %+v", term)
	}
	running := e.waitPhase(t, "svc", v1.PodRunning)
	if cs := running.Status.ContainerStatuses[0]; cs.State.Running == nil || !cs.Ready {
		t.Errorf("pretend container status = %+v", cs)
	}
	if c := findPodCondition(running.Status.Conditions, v1.PodReady); c == nil || c.Status != v1.ConditionTrue {
		t.Errorf("Ready = %+v", c)
	}
}

func TestKubeletWaitsForClaimThenRestartsAndDeletes(t *testing.T) {
	pvDir := t.TempDir()
	pvc, pv := boundClaim("data", pvDir)
	pending := pvc.DeepCopy()
	pending.Spec.VolumeName = ""
	pending.Status.Phase = v1.ClaimPending
	pod := simPod("web-0", v1.RestartPolicyAlways, "/bin/sh", "-c",
		`echo started >> /data/starts; n=$(wc -l < /data/starts); [ "$n" -ge 2 ] && exec sleep 300; exit 1`)
	pod.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}
	pod.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/data"}}
	e := newTestKubelet(t, pending, pv, pod)

	// Unbound claim: the pod stays Pending and nothing runs.
	eventually(t, 10*time.Second, "waiting status", func() bool {
		cs := e.pod(t, "web-0").Status.ContainerStatuses
		return len(cs) == 1 && cs[0].State.Waiting != nil && strings.Contains(cs[0].State.Waiting.Message, "not bound")
	})
	if _, err := os.Stat(filepath.Join(pvDir, "starts")); err == nil {
		t.Fatal("container ran before its claim was bound")
	}
	if _, err := e.client.CoreV1().PersistentVolumeClaims("default").Update(e.ctx, pvc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	// First run exits 1, the restart keeps running.
	got := e.waitPhase(t, "web-0", v1.PodRunning)
	eventually(t, 20*time.Second, "restarted and running", func() bool {
		got = e.pod(t, "web-0")
		cs := got.Status.ContainerStatuses[0]
		return cs.RestartCount == 1 && cs.State.Running != nil && cs.Ready
	})
	if last := got.Status.ContainerStatuses[0].LastTerminationState.Terminated; last == nil || last.ExitCode != 1 {
		t.Errorf("lastState = %+v", got.Status.ContainerStatuses[0].LastTerminationState)
	}

	// Graceful deletion: the kubelet kills the process and finalises.
	got.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	got.DeletionGracePeriodSeconds = ptr.To[int64](30)
	if _, err := e.client.CoreV1().Pods("default").Update(e.ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "pod deleted", func() bool {
		_, err := e.client.CoreV1().Pods("default").Get(e.ctx, "web-0", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	eventually(t, 5*time.Second, "processes gone", func() bool {
		e.k.runner.mu.Lock()
		defer e.k.runner.mu.Unlock()
		return len(e.k.runner.procs) == 0
	})
}

func TestKubeletLostNodeKillsWithoutUpdates(t *testing.T) {
	pod := simPod("lost", v1.RestartPolicyAlways, "/bin/sh", "-c", "exec sleep 300")
	e := newTestKubelet(t, pod)
	e.waitPhase(t, "lost", v1.PodRunning)
	eventually(t, 10*time.Second, "process running", func() bool {
		e.k.runner.mu.Lock()
		defer e.k.runner.mu.Unlock()
		return len(e.k.runner.procs) == 1
	})
	old := e.faults.Current()
	e.faults.set(map[string]string{KeyLostNodes: "sim-node-0"})
	e.k.FaultsChanged(old, e.faults.Current())
	eventually(t, 10*time.Second, "process killed", func() bool {
		e.k.runner.mu.Lock()
		defer e.k.runner.mu.Unlock()
		return len(e.k.runner.procs) == 0
	})
	time.Sleep(200 * time.Millisecond)
	if p := e.pod(t, "lost"); p.Status.Phase != v1.PodRunning || p.Status.ContainerStatuses[0].State.Running == nil {
		t.Errorf("status of a pod on a lost node changed: %+v", p.Status)
	}
}

// Pods share the host network and their IPs are on the host's loopback (127.0.0.0/8): a
// container can listen on its own pod IP and another pod reaches it there. The scale-down drain's
// e2e test (tests/cluster/e2e/drain.sh) relies on it: its cleanup pod, with another pod's
// hostname, sends files to receivers listening on the remaining replicas' pod IPs.
func TestKubeletPodsReachEachOtherOnPodIPs(t *testing.T) {
	if _, err := exec.LookPath("busybox"); err != nil {
		t.Skip("busybox is not installed (scripts/bootstrap installs it)")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	server := simPod("receiver", v1.RestartPolicyAlways, "/bin/sh", "-c",
		`mkdir -p /tmp/www && echo "hello from $HOSTNAME" > /tmp/www/hello && exec busybox httpd -f -p "$POD_IP:$PORT" -h /tmp/www`)
	server.Spec.Containers[0].Env = []v1.EnvVar{
		{Name: "POD_IP", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
		{Name: "PORT", Value: port},
	}
	e := newTestKubelet(t, server)
	ip := e.waitPhase(t, "receiver", v1.PodRunning).Status.PodIP
	if parsed := net.ParseIP(ip); parsed == nil || !parsed.IsLoopback() || ip == NodeIP {
		t.Fatalf("pod IP %q is not a loopback address of its own", ip)
	}

	// Running is reported when the container starts, before httpd listens: the client retries
	// (busybox 1.35's wget -T crashes on a refused connection, hence the loop).
	client := simPod("web-2", v1.RestartPolicyNever, "/bin/sh", "-c",
		`for i in $(seq 50); do got=$(busybox wget -q -O - "http://$SERVER/hello" 2>/dev/null) && break; sleep 0.1; done
echo "$(cat /proc/sys/kernel/hostname): $got"`)
	client.Spec.Hostname = "web-2"
	client.Spec.Subdomain = "web"
	client.Spec.Containers[0].Env = []v1.EnvVar{{Name: "SERVER", Value: net.JoinHostPort(ip, port)}}
	if _, err := e.client.CoreV1().Pods("default").Create(e.ctx, client, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitPhase(t, "web-2", v1.PodSucceeded)
	if log := e.podLog("web-2", "main"); log != "web-2: hello from receiver\n" {
		t.Errorf("log = %q (the receiver on %s:%s: %q)", log, ip, port, e.podLog("receiver", "main"))
	}
}

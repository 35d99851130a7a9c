package main

import (
	"errors"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"
)

func TestParseFaults(t *testing.T) {
	fs, warnings := ParseFaults(map[string]string{
		KeyFailNextJobPod:         "3",
		KeyFailNextJobPodSelector: "app=batch",
		KeyFailJobPods:            "7",
		KeyPodStartDelay:          "1.5s",
		KeyFailProvisioning:       "sim-fixed, other",
		KeyLostNodes:              "sim-node-1,,sim-node-2",
	})
	if len(warnings) != 0 {
		t.Errorf("warnings: %v", warnings)
	}
	if *fs.FailNextJobPod != 3 || *fs.FailJobPods != 7 || fs.PodStartDelay != 1500*time.Millisecond {
		t.Errorf("parsed %+v", fs)
	}
	if !fs.ProvisioningFails("other") || fs.ProvisioningFails("sim-expandable") {
		t.Errorf("FailProvisioning = %v", fs.FailProvisioning)
	}
	if !fs.NodeLost("sim-node-2") || fs.NodeLost("sim-node-0") || len(fs.LostNodes) != 2 {
		t.Errorf("LostNodes = %v", fs.LostNodes)
	}

	fs, warnings = ParseFaults(map[string]string{KeyFailJobPods: "x", KeyPodStartDelay: "soon", KeyFailNextJobPodSelector: "a in ("})
	if len(warnings) != 3 || fs.FailJobPods != nil || fs.PodStartDelay != 0 {
		t.Errorf("fs=%+v warnings=%v", fs, warnings)
	}
	if fs.FailNextJobPodSelector.Matches(nil) {
		t.Error("an unparseable selector must match nothing")
	}
	if empty, _ := ParseFaults(nil); empty.FailNextJobPod != nil || empty.ProvisioningFails("x") {
		t.Errorf("empty = %+v", empty)
	}
}

func faultsCM(data map[string]string) *v1.ConfigMap {
	return &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: FaultsName, Namespace: FaultsNamespace, ResourceVersion: "1"}, Data: data}
}

func jobPod(name string, lbls map[string]string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: "default", Labels: lbls,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "j", UID: "job-uid"}},
	}}
}

func TestFailNextJobPodConsumedOnce(t *testing.T) {
	env := newTestEnv(t, faultsCM(map[string]string{KeyFailNextJobPod: "42", "unrelated": "keep"}))
	// Not a Job pod: never affected, key not consumed.
	if _, fail := env.faults.JobPodFailure(env.ctx, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "plain"}}); fail {
		t.Fatal("non-Job pod failed")
	}
	code, fail := env.faults.JobPodFailure(env.ctx, jobPod("p1", nil))
	if !fail || code != 42 {
		t.Fatalf("first Job pod: fail=%v code=%d", fail, code)
	}
	cm, _ := env.client.CoreV1().ConfigMaps(FaultsNamespace).Get(env.ctx, FaultsName, metav1.GetOptions{})
	if _, ok := cm.Data[KeyFailNextJobPod]; ok || cm.Data["unrelated"] != "keep" {
		t.Errorf("ConfigMap after consumption: %v", cm.Data)
	}
	if _, fail := env.faults.JobPodFailure(env.ctx, jobPod("p2", nil)); fail {
		t.Error("second Job pod failed too")
	}
}

func TestFailNextJobPodRetriesOnConflict(t *testing.T) {
	env := newTestEnv(t, faultsCM(map[string]string{KeyFailNextJobPod: "5"}))
	conflicts := 0
	env.client.PrependReactor("update", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		if conflicts == 0 {
			conflicts++
			return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, FaultsName, errors.New("changed"))
		}
		return false, nil, nil
	})
	code, fail := env.faults.JobPodFailure(env.ctx, jobPod("p", nil))
	if !fail || code != 5 || conflicts != 1 {
		t.Fatalf("fail=%v code=%d conflicts=%d", fail, code, conflicts)
	}
	var updates int
	for _, a := range env.client.Actions() {
		if a.GetVerb() == "update" {
			updates++
		}
	}
	if updates != 2 {
		t.Errorf("updates = %d, want 2 (conflict + retry)", updates)
	}
}

func TestFailNextJobPodSelector(t *testing.T) {
	env := newTestEnv(t, faultsCM(map[string]string{KeyFailNextJobPod: "1", KeyFailNextJobPodSelector: "app=target"}))
	if _, fail := env.faults.JobPodFailure(env.ctx, jobPod("other", map[string]string{"app": "other"})); fail {
		t.Fatal("pod outside the selector failed")
	}
	if code, fail := env.faults.JobPodFailure(env.ctx, jobPod("t", map[string]string{"app": "target"})); !fail || code != 1 {
		t.Fatalf("selected pod: fail=%v code=%d", fail, code)
	}
	cm, _ := env.client.CoreV1().ConfigMaps(FaultsNamespace).Get(env.ctx, FaultsName, metav1.GetOptions{})
	if len(cm.Data) != 0 {
		t.Errorf("ConfigMap after consumption: %v", cm.Data)
	}
}

func TestFailJobPodsWhilePresent(t *testing.T) {
	env := newTestEnv(t, faultsCM(map[string]string{KeyFailJobPods: "9"}))
	for _, name := range []string{"a", "b", "c"} {
		if code, fail := env.faults.JobPodFailure(env.ctx, jobPod(name, nil)); !fail || code != 9 {
			t.Fatalf("%s: fail=%v code=%d", name, fail, code)
		}
	}
	_ = env.client.CoreV1().ConfigMaps(FaultsNamespace).Delete(env.ctx, FaultsName, metav1.DeleteOptions{})
	if _, fail := env.faults.JobPodFailure(env.ctx, jobPod("d", nil)); fail {
		t.Fatal("failed after the ConfigMap was deleted")
	}
}

func TestFaultsInformerNotifiesListeners(t *testing.T) {
	env := newTestEnv(t)
	changes := make(chan FaultSet, 10)
	env.faults.OnChange(func(_, cur FaultSet) { changes <- cur })
	env.faults.Start(env.ctx)
	eventually(t, 5*time.Second, "fault informer sync", env.faults.HasSynced)
	if _, err := env.client.CoreV1().ConfigMaps(FaultsNamespace).Create(env.ctx, faultsCM(map[string]string{KeyLostNodes: "sim-node-1"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case cur := <-changes:
		if !cur.NodeLost("sim-node-1") {
			t.Errorf("change = %+v", cur)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no change notification")
	}
	if !env.faults.Current().NodeLost("sim-node-1") {
		t.Error("Current() not updated")
	}
}

package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

// stopReason says why a pod worker is being stopped; a higher value wins.
type stopReason int

const (
	stopNone   stopReason = iota
	stopDelete            // pod is being deleted: kill, post final status, finalise deletion
	stopFreeze            // node lost or nodesim shutting down: kill, write nothing
	stopGone              // pod object vanished or was replaced: kill, write nothing
)

type containerKind int

const (
	kindInit containerKind = iota
	kindSidecar
	kindMain
)

const (
	maxKillGrace     = 5 * time.Second
	maxRestartDelay  = 10 * time.Second
	resetBackoffTime = time.Minute
	apiTimeout       = 30 * time.Second
)

// NoCommandMessage is the termination message of a run-to-completion
// container without a command.
const NoCommandMessage = "nodesim: container has no command; nodesim has no image runtime and can only run containers with an explicit command"

// NoImageCommandMessage is the termination message of a run-to-completion
// container from a local image when neither it nor the image has a command.
const NoImageCommandMessage = "nodesim: container has no command and image %q has no Entrypoint or Cmd"

// podWorker owns the processes and the status of one pod (one UID).
type podWorker struct {
	k    *Kubelet
	key  string
	uid  types.UID
	node string
	pod  *v1.Pod // snapshot taken when the worker started
	net  PodNetwork
	dir  string
	log  *slog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	mu        sync.Mutex
	reason    stopReason
	grace     time.Duration
	st        statusSnapshot
	volumes   map[string]PodVolume
	completed bool

	flushMu sync.Mutex
}

func newPodWorker(k *Kubelet, key string, pod *v1.Pod, podIP string) *podWorker {
	ctx, cancel := context.WithCancel(context.Background())
	w := &podWorker{
		k:      k,
		key:    key,
		uid:    pod.UID,
		node:   pod.Spec.NodeName,
		pod:    pod.DeepCopy(),
		net:    PodNetwork{PodIP: podIP, HostIP: NodeIP},
		dir:    filepath.Join(k.workdir, "pods", pod.Namespace+"_"+pod.Name),
		log:    k.log.With("pod", key, "uid", string(pod.UID), "node", pod.Spec.NodeName),
		ctx:    ctx,
		cancel: cancel,
		done:   make(chan struct{}),
	}
	w.st = statusSnapshot{Phase: v1.PodPending, PodIP: podIP, HostIP: NodeIP, StartTime: metav1.Now()}
	if pod.Status.StartTime != nil {
		w.st.StartTime = *pod.Status.StartTime
	}
	return w
}

// stop asks the worker to kill its processes; it returns immediately.
func (w *podWorker) stop(reason stopReason, grace time.Duration) {
	w.mu.Lock()
	if reason > w.reason {
		w.reason = reason
	}
	if w.grace == 0 || grace < w.grace {
		w.grace = grace
	}
	w.mu.Unlock()
	w.cancel()
}

func (w *podWorker) stopReason() stopReason {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.reason
}

func (w *podWorker) killGrace() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch w.reason {
	case stopNone:
		return 2 * time.Second // sidecars at the end of a run-to-completion pod
	case stopDelete:
		return w.grace
	}
	return 0
}

func (w *podWorker) restartPolicy() v1.RestartPolicy {
	if w.pod.Spec.RestartPolicy == "" {
		return v1.RestartPolicyAlways
	}
	return w.pod.Spec.RestartPolicy
}

func (w *podWorker) containers(kind containerKind) []v1.Container {
	if kind == kindMain {
		return w.pod.Spec.Containers
	}
	return w.pod.Spec.InitContainers
}

// statuses returns the status slice of kind (call with w.mu held).
func (w *podWorker) statuses(kind containerKind) []v1.ContainerStatus {
	if kind == kindMain {
		return w.st.Main
	}
	return w.st.Init
}

func (w *podWorker) run() {
	defer close(w.done)
	defer w.k.workerExited(w)
	w.log.Info("pod worker starting", "restartPolicy", w.restartPolicy(), "podIP", w.net.PodIP)
	if err := w.setupDir(); err != nil {
		w.log.Error("creating pod directory", "err", err)
	}
	w.initStatuses()
	w.flush()
	if w.prepareVolumes() && w.startDelay() {
		w.runContainers()
	}
	w.finish()
}

// setupDir creates the pod directory; a directory left by an older pod of
// the same name is moved to pods/.old/.
func (w *podWorker) setupDir() error {
	marker := filepath.Join(w.dir, ".uid")
	if b, err := os.ReadFile(marker); err == nil && strings.TrimSpace(string(b)) != string(w.uid) {
		old := filepath.Join(w.k.workdir, "pods", ".old", filepath.Base(w.dir)+"."+strings.TrimSpace(string(b)))
		if err := os.MkdirAll(filepath.Dir(old), 0o755); err != nil {
			return err
		}
		if err := os.Rename(w.dir, old); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(w.dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(marker, []byte(string(w.uid)+"\n"), 0o644)
}

// initStatuses builds the container statuses, carrying restart counts and
// final states over from the API (nodesim may have been restarted).
func (w *podWorker) initStatuses() {
	w.mu.Lock()
	defer w.mu.Unlock()
	mainReason := "ContainerCreating"
	if len(w.pod.Spec.InitContainers) > 0 {
		mainReason = "PodInitializing"
	}
	for _, kind := range []containerKind{kindInit, kindMain} {
		var old []v1.ContainerStatus
		reason := mainReason
		if kind == kindInit {
			old, reason = w.pod.Status.InitContainerStatuses, "PodInitializing"
		} else {
			old = w.pod.Status.ContainerStatuses
		}
		cs := w.containers(kind)
		out := make([]v1.ContainerStatus, len(cs))
		for i := range cs {
			out[i] = waitingStatus(&cs[i], reason, 0)
			for _, o := range old {
				if o.Name != cs[i].Name {
					continue
				}
				out[i].RestartCount = o.RestartCount
				out[i].LastTerminationState = o.LastTerminationState
				if t := o.State.Terminated; t != nil && w.isFinalExit(kind, t.ExitCode) {
					out[i] = o
				}
			}
		}
		if kind == kindInit {
			w.st.Init = out
		} else {
			w.st.Main = out
		}
	}
}

// isFinalExit reports whether a container of kind that exited with code is
// not restarted.
func (w *podWorker) isFinalExit(kind containerKind, code int32) bool {
	switch kind {
	case kindSidecar:
		return false
	case kindInit:
		return code == 0 || w.restartPolicy() == v1.RestartPolicyNever
	}
	switch w.restartPolicy() {
	case v1.RestartPolicyNever:
		return true
	case v1.RestartPolicyOnFailure:
		return code == 0
	}
	return false
}

func (w *podWorker) isFinal(kind containerKind, i int) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	t := w.statuses(kind)[i].State.Terminated
	return t != nil && w.isFinalExit(kind, t.ExitCode)
}

// prepareVolumes resolves the pod's volumes, waiting (like a kubelet) while
// e.g. a PVC is not bound yet. It returns false if the worker was stopped.
func (w *podWorker) prepareVolumes() bool {
	delay := 500 * time.Millisecond
	lastMsg := ""
	for {
		vols, err := w.k.volumes.Prepare(w.ctx, w.pod, w.dir, w.net)
		if err == nil {
			w.mu.Lock()
			w.volumes = vols
			w.st.VolumesReady = true
			w.mu.Unlock()
			w.log.Info("volumes ready", "count", len(vols))
			return true
		}
		if w.ctx.Err() != nil {
			return false
		}
		if msg := err.Error(); msg != lastMsg {
			lastMsg = msg
			var we *WaitError
			if errors.As(err, &we) {
				w.log.Info("waiting for volumes", "reason", msg)
			} else {
				w.log.Error("preparing volumes", "err", err)
			}
			w.k.recorder.Event(w.pod, v1.EventTypeWarning, "FailedMount", msg)
			w.setAllWaiting("ContainerCreating", msg)
			w.flush()
		}
		if !sleepCtx(w.ctx, delay) {
			return false
		}
		delay = min(2*delay, 5*time.Second)
	}
}

func (w *podWorker) setAllWaiting(reason, msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, s := range [][]v1.ContainerStatus{w.st.Init, w.st.Main} {
		for i := range s {
			if s[i].State.Waiting != nil {
				s[i].State.Waiting = &v1.ContainerStateWaiting{Reason: reason, Message: msg}
			}
		}
	}
}

// startDelay honours the podStartDelay fault.
func (w *podWorker) startDelay() bool {
	d := w.k.faults.Current().PodStartDelay
	if d <= 0 {
		return true
	}
	w.log.Info("delaying pod start (fault podStartDelay)", "delay", d)
	return sleepCtx(w.ctx, d)
}

func (w *podWorker) runContainers() {
	sidecarCtx, stopSidecars := context.WithCancel(w.ctx)
	defer stopSidecars()
	var sidecars sync.WaitGroup
	initOK := w.runInitContainers(sidecarCtx, &sidecars)
	if initOK {
		w.mu.Lock()
		w.st.Initialized = true
		w.mu.Unlock()
		w.flush()
		var wg sync.WaitGroup
		for i := range w.pod.Spec.Containers {
			if w.isFinal(kindMain, i) {
				continue
			}
			wg.Go(func() { w.containerLoop(w.ctx, kindMain, i, nil) })
		}
		wg.Wait()
	}
	stopSidecars()
	sidecars.Wait()
	if w.ctx.Err() == nil {
		w.complete()
	}
}

// runInitContainers runs init containers in order; sidecars (restartable
// init containers) are started and left running. It returns false if the
// pod cannot proceed (failure with restartPolicy Never, or stopped).
func (w *podWorker) runInitContainers(sidecarCtx context.Context, sidecars *sync.WaitGroup) bool {
	for i := range w.pod.Spec.InitContainers {
		c := &w.pod.Spec.InitContainers[i]
		if isSidecar(c) {
			started := make(chan struct{})
			sidecars.Go(func() { w.containerLoop(sidecarCtx, kindSidecar, i, started) })
			select {
			case <-started:
			case <-w.ctx.Done():
				return false
			}
			continue
		}
		if w.isFinal(kindInit, i) {
			continue
		}
		term := w.containerLoop(w.ctx, kindInit, i, nil)
		if term == nil || term.ExitCode != 0 {
			return false
		}
	}
	return true
}

type runOutcome struct {
	term      *v1.ContainerStateTerminated
	permanent bool  // do not restart whatever the policy
	configErr error // could not build the container; retry
	ranFor    time.Duration
}

// containerLoop runs container i of kind until it is finally terminated
// (returned) or ctx is cancelled (nil). started, if non-nil, is closed after
// the first start attempt.
func (w *podWorker) containerLoop(ctx context.Context, kind containerKind, i int, started chan struct{}) *v1.ContainerStateTerminated {
	var once sync.Once
	signal := func() {
		if started != nil {
			once.Do(func() { close(started) })
		}
	}
	defer signal()
	c := &w.containers(kind)[i]
	backoff := time.Second
	for {
		if ctx.Err() != nil {
			return nil
		}
		out := w.runOnce(ctx, kind, i, c, signal)
		signal()
		if out.configErr != nil {
			if ctx.Err() != nil {
				return nil
			}
			w.log.Error("cannot create container", "container", c.Name, "err", out.configErr)
			w.k.recorder.Event(w.pod, v1.EventTypeWarning, "Failed", fmt.Sprintf("container %s: %v", c.Name, out.configErr))
			reason := "CreateContainerConfigError"
			if ce, ok := errors.AsType[*CreateError](out.configErr); ok {
				reason = ce.Reason
			}
			w.update(kind, i, func(s *v1.ContainerStatus) {
				s.State = v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: reason, Message: out.configErr.Error()}}
			})
			w.flush()
			if !sleepCtx(ctx, backoff) {
				return nil
			}
			backoff = min(2*backoff, maxRestartDelay)
			continue
		}
		term := out.term
		if ctx.Err() != nil {
			// Killed because the pod is going away: record, no restart.
			w.update(kind, i, func(s *v1.ContainerStatus) {
				s.State = v1.ContainerState{Terminated: term}
				s.Ready, s.Started = false, ptr.To(false)
			})
			return nil
		}
		if out.permanent || w.isFinalExit(kind, term.ExitCode) {
			w.update(kind, i, func(s *v1.ContainerStatus) {
				s.State = v1.ContainerState{Terminated: term}
				s.Ready = kind == kindInit && term.ExitCode == 0
				s.Started = ptr.To(false)
			})
			w.flush()
			return term
		}
		if out.ranFor > resetBackoffTime {
			backoff = time.Second
		}
		w.log.Info("restarting container", "container", c.Name, "exitCode", term.ExitCode, "backoff", backoff)
		w.update(kind, i, func(s *v1.ContainerStatus) {
			s.LastTerminationState = v1.ContainerState{Terminated: term}
			s.State = v1.ContainerState{Waiting: &v1.ContainerStateWaiting{
				Reason:  "CrashLoopBackOff",
				Message: fmt.Sprintf("back-off %s restarting failed container=%s pod=%s", backoff, c.Name, w.pod.Name),
			}}
			s.RestartCount++
			s.Ready, s.Started = false, ptr.To(false)
		})
		w.flush()
		if !sleepCtx(ctx, backoff) {
			return nil
		}
		backoff = min(2*backoff, maxRestartDelay)
	}
}

func (w *podWorker) containerID(name string, restarts int32) string {
	return fmt.Sprintf("nodesim://%s/%s/%d", w.uid, name, restarts)
}

// runOnce runs one attempt of a container and reports how it ended.
func (w *podWorker) runOnce(ctx context.Context, kind containerKind, i int, c *v1.Container, started func()) runOutcome {
	w.mu.Lock()
	restarts := w.statuses(kind)[i].RestartCount
	w.mu.Unlock()
	id := w.containerID(c.Name, restarts)
	log := w.log.With("container", c.Name, "restartCount", restarts)

	if kind == kindMain {
		if code, fail := w.k.faults.JobPodFailure(ctx, w.pod); fail {
			now := metav1.Now()
			log.Info("container failed by fault injection", "exitCode", code)
			return runOutcome{term: &v1.ContainerStateTerminated{
				ExitCode: code, Reason: exitReason(code), Message: InjectedFailureMessage,
				StartedAt: now, FinishedAt: now, ContainerID: id,
			}}
		}
	}

	img, err := w.k.images.Lookup(c.Image)
	if err != nil {
		return runOutcome{configErr: &CreateError{"ImageInspectError", err}}
	}
	noCommand, noCommandMsg := len(c.Command) == 0, NoCommandMessage
	if img != nil {
		log.Info("running container from local image", "image", img.Ref, "rootfs", img.RootFS,
			"imageID", img.Digest, "os", img.OS, "arch", img.Architecture)
		w.k.recorder.Eventf(w.pod, v1.EventTypeNormal, "Pulled", "Container image %q already present on machine", c.Image)
		if img.Digest != "" {
			w.update(kind, i, func(s *v1.ContainerStatus) { s.ImageID = img.Digest })
		}
	} else {
		log.Info("image not present locally, running on the host filesystem", "image", c.Image)
	}

	spec, err := w.containerSpec(ctx, c, img)
	if err != nil {
		return runOutcome{configErr: err}
	}
	if img != nil {
		noCommand, noCommandMsg = len(spec.Argv) == 0, fmt.Sprintf(NoImageCommandMessage, img.Ref)
	}

	if noCommand {
		if kind == kindSidecar || w.restartPolicy() == v1.RestartPolicyAlways {
			// No image runtime: pretend the container runs until killed.
			startedAt := metav1.Now()
			w.setRunning(kind, i, startedAt, id)
			w.flush()
			started()
			log.Info("container has no command; pretending it runs")
			<-ctx.Done()
			return runOutcome{term: &v1.ContainerStateTerminated{
				ExitCode: 0, Reason: "Completed", StartedAt: startedAt, FinishedAt: metav1.Now(), ContainerID: id,
			}}
		}
		now := metav1.Now()
		log.Error("container has no command, failing it")
		return runOutcome{permanent: true, term: &v1.ContainerStateTerminated{
			ExitCode: 128, Reason: "ContainerCannotRun", Message: noCommandMsg,
			StartedAt: now, FinishedAt: now, ContainerID: id,
		}}
	}

	logPath := filepath.Join(w.dir, c.Name+".log")
	_ = os.WriteFile(spec.TerminationMessageSource, nil, 0o644)
	var logOffset int64
	if st, err := os.Stat(logPath); err == nil {
		logOffset = st.Size()
	}
	// Before the start, so that a log reader who sees this run's container
	// ID in the status also finds where the run begins.
	if err := recordRun(logPath, logOffset, id); err != nil {
		log.Error("recording the run in the log's run index", "err", err)
	}
	p, err := w.k.runner.Start(spec, logPath)
	if err != nil {
		now := metav1.Now()
		log.Error("container failed to start", "err", err)
		return runOutcome{term: &v1.ContainerStateTerminated{
			ExitCode: 128, Reason: "StartError", Message: err.Error(),
			StartedAt: now, FinishedAt: now, ContainerID: id,
		}}
	}
	defer w.k.trackRun(id, p.Done())()
	startedAt := metav1.NewTime(p.StartedAt())
	w.setRunning(kind, i, startedAt, id)
	log.Info("container started", "pid", p.Pid(), "argv", spec.Argv, "log", logPath)
	w.k.recorder.Eventf(w.pod, v1.EventTypeNormal, "Started", "Started container %s", c.Name)
	w.flush()
	started()
	select {
	case <-p.Done():
	case <-ctx.Done():
		grace := w.killGrace()
		log.Info("killing container", "grace", grace)
		p.Stop(grace)
	}
	code := int32(p.ExitCode())
	msg := TerminationMessage(spec.TerminationMessageSource,
		c.TerminationMessagePolicy == v1.TerminationMessageFallbackToLogsOnError, int(code), logPath, logOffset)
	log.Info("container exited", "exitCode", code, "message", msg)
	return runOutcome{ranFor: time.Since(p.StartedAt()), term: &v1.ContainerStateTerminated{
		ExitCode: code, Reason: exitReason(code), Message: msg,
		StartedAt: startedAt, FinishedAt: metav1.Now(), ContainerID: id,
	}}
}

func (w *podWorker) update(kind containerKind, i int, fn func(*v1.ContainerStatus)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	fn(&w.statuses(kind)[i])
}

func (w *podWorker) setRunning(kind containerKind, i int, startedAt metav1.Time, id string) {
	w.update(kind, i, func(s *v1.ContainerStatus) {
		s.State = v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: startedAt}}
		s.ContainerID = id
		// Readiness probes are treated as passing; init containers are
		// ready only once they have completed.
		s.Ready = kind != kindInit
		s.Started = ptr.To(true)
	})
}

// containerSpec builds the sandbox description of container c, run from
// img if it is not nil.
func (w *podWorker) containerSpec(ctx context.Context, c *v1.Container, img *LocalImage) (ContainerSpec, error) {
	base := BaseEnv(w.pod, w.k.apiServer)
	if img != nil {
		base = ImageBaseEnv(img.Config.Env, base)
	}
	env, err := ResolveEnv(ctx, w.pod, c, w.net, base, w.k.getter)
	if err != nil {
		return ContainerSpec{}, err
	}
	vars := map[string]string{}
	for _, e := range env {
		vars[e.Name] = e.Value
	}
	w.mu.Lock()
	vols := w.volumes
	w.mu.Unlock()
	mounts, err := ContainerMounts(c, vols, func(n string) (string, bool) { v, ok := vars[n]; return v, ok })
	if err != nil {
		return ContainerSpec{}, err
	}
	hostname := w.pod.Name
	if w.pod.Spec.Hostname != "" {
		hostname = w.pod.Spec.Hostname
	}
	if len(hostname) > 63 {
		hostname = hostname[:63]
	}
	spec := ContainerSpec{
		Argv:                     ContainerArgv(c, env),
		Env:                      env,
		Mounts:                   mounts,
		WorkingDir:               c.WorkingDir,
		Hostname:                 hostname,
		TerminationMessageSource: filepath.Join(w.dir, c.Name+".termination-log"),
		TerminationMessagePath:   c.TerminationMessagePath,
	}
	if img != nil {
		if err := applyImage(&spec, w.pod, c, img); err != nil {
			return ContainerSpec{}, err
		}
	}
	return spec, nil
}

// ContainerMounts translates volumeMounts into bind mounts, resolving
// subPath/subPathExpr (created on demand in writable volumes).
func ContainerMounts(c *v1.Container, vols map[string]PodVolume, lookup func(string) (string, bool)) ([]Mount, error) {
	var mounts []Mount
	for _, vm := range c.VolumeMounts {
		vol, ok := vols[vm.Name]
		if !ok {
			return nil, fmt.Errorf("volumeMount %q: no such volume", vm.Name)
		}
		src := vol.Path
		sub := vm.SubPath
		if vm.SubPathExpr != "" {
			sub = ExpandVars(vm.SubPathExpr, lookup)
		}
		if sub != "" {
			clean := filepath.Clean(sub)
			if filepath.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") {
				return nil, fmt.Errorf("volumeMount %q: invalid subPath %q", vm.Name, sub)
			}
			src = filepath.Join(src, clean)
			if _, err := os.Stat(src); os.IsNotExist(err) {
				if !vol.Writable {
					return nil, fmt.Errorf("volumeMount %q: subPath %q does not exist", vm.Name, sub)
				}
				if err := os.MkdirAll(src, 0o777); err != nil {
					return nil, err
				}
			}
		}
		mounts = append(mounts, Mount{Source: src, Target: vm.MountPath, ReadOnly: vm.ReadOnly || vol.ReadOnly})
	}
	return mounts, nil
}

// complete records the terminal phase of a run-to-completion pod.
func (w *podWorker) complete() {
	w.mu.Lock()
	w.st.Phase = terminalPhase(w.st)
	w.completed = true
	phase := w.st.Phase
	w.mu.Unlock()
	w.log.Info("pod finished", "phase", phase)
	w.flush()
}

// terminalPhase is Succeeded if every main container exited 0 (and no init
// container failed), else Failed.
func terminalPhase(s statusSnapshot) v1.PodPhase {
	for _, c := range s.Init {
		if t := c.State.Terminated; t != nil && t.ExitCode != 0 {
			return v1.PodFailed
		}
	}
	if len(s.Main) == 0 {
		return v1.PodFailed
	}
	for _, c := range s.Main {
		if t := c.State.Terminated; t == nil || t.ExitCode != 0 {
			return v1.PodFailed
		}
	}
	return v1.PodSucceeded
}

// currentPhase derives the phase of a pod that has not completed.
func currentPhase(s statusSnapshot) v1.PodPhase {
	if s.Phase == v1.PodSucceeded || s.Phase == v1.PodFailed {
		return s.Phase
	}
	if !s.Initialized {
		return v1.PodPending
	}
	for _, c := range s.Main {
		if c.State.Running != nil || (c.State.Waiting != nil && c.LastTerminationState.Terminated != nil) || c.State.Terminated != nil {
			return v1.PodRunning
		}
	}
	return v1.PodPending
}

// finish runs when the worker is done: for a deleted pod it posts the final
// status and finalises the deletion.
func (w *podWorker) finish() {
	switch reason := w.stopReason(); reason {
	case stopDelete:
		w.mu.Lock()
		if !w.completed {
			w.st.Phase = terminalPhase(w.st)
			w.completed = true
		}
		w.mu.Unlock()
		w.flush()
		ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
		defer cancel()
		uid := w.uid
		err := w.k.client.CoreV1().Pods(w.pod.Namespace).Delete(ctx, w.pod.Name, metav1.DeleteOptions{
			GracePeriodSeconds: ptr.To[int64](0),
			Preconditions:      &metav1.Preconditions{UID: &uid},
		})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			w.log.Error("finalising pod deletion", "err", err)
			return
		}
		w.log.Info("pod deleted")
	case stopFreeze, stopGone:
		w.log.Info("pod worker stopped without status update", "reason", map[stopReason]string{stopFreeze: "node lost or shutdown", stopGone: "pod gone"}[reason])
	default:
		w.log.Info("pod worker done")
	}
}

// flush writes the worker's view of the status through pods/status.
func (w *podWorker) flush() {
	w.flushMu.Lock()
	defer w.flushMu.Unlock()
	w.mu.Lock()
	if w.reason == stopFreeze || w.reason == stopGone {
		w.mu.Unlock()
		return
	}
	snap := w.st
	snap.Init = cloneStatuses(w.st.Init)
	snap.Main = cloneStatuses(w.st.Main)
	snap.Phase = currentPhase(w.st)
	w.mu.Unlock()
	if w.k.faults.Current().NodeLost(w.node) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
	defer cancel()
	pods := w.k.client.CoreV1().Pods(w.pod.Namespace)
	first := true
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		var cur *v1.Pod
		var err error
		if first {
			first = false
			cur, err = w.k.podLister.Pods(w.pod.Namespace).Get(w.pod.Name)
		}
		if cur == nil || err != nil {
			cur, err = pods.Get(ctx, w.pod.Name, metav1.GetOptions{})
		}
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if cur.UID != w.uid {
			return nil
		}
		if (cur.Status.Phase == v1.PodSucceeded || cur.Status.Phase == v1.PodFailed) && cur.Status.Phase != snap.Phase {
			return nil // never leave a terminal phase
		}
		st := applyStatus(cur, snap, metav1.Now())
		if equality.Semantic.DeepEqual(st, cur.Status) {
			return nil
		}
		cur = cur.DeepCopy()
		cur.Status = st
		_, err = pods.UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil && !apierrors.IsNotFound(err) {
		w.log.Error("updating pod status", "err", err)
	}
}

func cloneStatuses(in []v1.ContainerStatus) []v1.ContainerStatus {
	out := make([]v1.ContainerStatus, len(in))
	for i := range in {
		in[i].DeepCopyInto(&out[i])
	}
	return out
}

// sleepCtx sleeps for d; false if ctx was cancelled first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

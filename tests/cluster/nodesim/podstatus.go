package main

import (
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// statusSnapshot is what a pod worker knows about its pod's status.
type statusSnapshot struct {
	Phase        v1.PodPhase
	VolumesReady bool
	Initialized  bool
	Init, Main   []v1.ContainerStatus
	PodIP        string
	HostIP       string
	StartTime    metav1.Time
	Reason       string
	Message      string
}

// managedConditions are the pod conditions owned by the kubelet.
var managedConditions = []v1.PodConditionType{
	v1.PodReadyToStartContainers, v1.PodInitialized, v1.ContainersReady, v1.PodReady,
}

// applyStatus returns the status pod should have given s. Conditions owned
// by others (PodScheduled, DisruptionTarget, readiness gates...) are kept.
func applyStatus(pod *v1.Pod, s statusSnapshot, now metav1.Time) v1.PodStatus {
	st := *pod.Status.DeepCopy()
	st.Phase = s.Phase
	st.Reason, st.Message = s.Reason, s.Message
	st.ObservedGeneration = pod.Generation
	if s.HostIP != "" {
		st.HostIP = s.HostIP
		st.HostIPs = []v1.HostIP{{IP: s.HostIP}}
	}
	if s.PodIP != "" {
		st.PodIP = s.PodIP
		st.PodIPs = []v1.PodIP{{IP: s.PodIP}}
	}
	if st.StartTime == nil && !s.StartTime.IsZero() {
		t := s.StartTime
		st.StartTime = &t
	}
	st.InitContainerStatuses = slices.Clone(s.Init)
	st.ContainerStatuses = slices.Clone(s.Main)

	terminal := s.Phase == v1.PodSucceeded || s.Phase == v1.PodFailed
	var conds []v1.PodCondition
	add := func(t v1.PodConditionType, ok bool, reason, msg string) {
		c := v1.PodCondition{Type: t, Status: v1.ConditionFalse, ObservedGeneration: pod.Generation}
		if ok {
			c.Status = v1.ConditionTrue
		} else {
			c.Reason, c.Message = reason, msg
		}
		conds = append(conds, c)
	}
	add(v1.PodReadyToStartContainers, s.VolumesReady && !terminal, "", "")

	var incomplete []string
	for _, c := range s.Init {
		if c.State.Terminated == nil || c.State.Terminated.ExitCode != 0 {
			if !isSidecarStatus(pod, c.Name) || !c.Ready {
				incomplete = append(incomplete, c.Name)
			}
		}
	}
	initReason := "ContainersNotInitialized"
	if terminal {
		initReason = "PodCompleted"
	}
	add(v1.PodInitialized, s.Initialized, initReason,
		fmt.Sprintf("containers with incomplete status: [%s]", strings.Join(incomplete, " ")))

	var unready []string
	for _, c := range s.Main {
		if !c.Ready {
			unready = append(unready, c.Name)
		}
	}
	for _, c := range s.Init {
		if isSidecarStatus(pod, c.Name) && !c.Ready {
			unready = append(unready, c.Name)
		}
	}
	readyReason, readyMsg := "ContainersNotReady", fmt.Sprintf("containers with unready status: [%s]", strings.Join(unready, " "))
	if terminal {
		readyReason = "PodCompleted"
		readyMsg = ""
	}
	containersReady := len(unready) == 0 && len(s.Main) > 0 && !terminal
	add(v1.ContainersReady, containersReady, readyReason, readyMsg)

	podReady, podReadyReason, podReadyMsg := containersReady, readyReason, readyMsg
	if podReady {
		var gates []string
		for _, g := range pod.Spec.ReadinessGates {
			if c := findPodCondition(pod.Status.Conditions, g.ConditionType); c == nil || c.Status != v1.ConditionTrue {
				gates = append(gates, string(g.ConditionType))
			}
		}
		if len(gates) > 0 {
			podReady, podReadyReason = false, "ReadinessGatesNotReady"
			podReadyMsg = fmt.Sprintf("corresponding condition of pod readiness gate %q does not exist.", gates[0])
		}
	}
	add(v1.PodReady, podReady, podReadyReason, podReadyMsg)

	merged := slices.DeleteFunc(slices.Clone(st.Conditions), func(c v1.PodCondition) bool {
		return slices.Contains(managedConditions, c.Type)
	})
	for _, c := range conds {
		c.LastTransitionTime = now
		if old := findPodCondition(pod.Status.Conditions, c.Type); old != nil && old.Status == c.Status {
			c.LastTransitionTime = old.LastTransitionTime
			c.LastProbeTime = old.LastProbeTime
		}
		merged = append(merged, c)
	}
	st.Conditions = merged
	return st
}

func findPodCondition(conds []v1.PodCondition, t v1.PodConditionType) *v1.PodCondition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

// isSidecar reports whether c is a restartable init container.
func isSidecar(c *v1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways
}

func isSidecarStatus(pod *v1.Pod, name string) bool {
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return isSidecar(&pod.Spec.InitContainers[i])
		}
	}
	return false
}

// waitingStatus is the initial status of a container that has not run.
func waitingStatus(c *v1.Container, reason string, restarts int32) v1.ContainerStatus {
	return v1.ContainerStatus{
		Name:         c.Name,
		Image:        c.Image,
		ImageID:      imageID(c.Image),
		RestartCount: restarts,
		Started:      ptr.To(false),
		State:        v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: reason}},
	}
}

func imageID(image string) string { return "nodesim://" + image }

// exitReason is the terminated reason the kubelet reports for exit code.
func exitReason(code int32) string {
	if code == 0 {
		return "Completed"
	}
	return "Error"
}

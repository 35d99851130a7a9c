package main

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestNodesRegisterHeartbeatTaintsAndLoss(t *testing.T) {
	env := newTestEnv(t)
	m := NewNodeManager(env.client, env.factory, testNodes, env.faults, env.log)
	if err := m.Register(env.ctx); err != nil {
		t.Fatal(err)
	}
	env.start(t)
	for _, name := range testNodes {
		n, err := env.client.CoreV1().Nodes().Get(env.ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if n.Labels[v1.LabelHostname] != name || n.Labels[v1.LabelTopologyZone] != "sim" || n.Labels[v1.LabelOSStable] != "linux" {
			t.Errorf("%s labels = %v", name, n.Labels)
		}
		if q := n.Status.Allocatable[v1.ResourceMemory]; q.Cmp(resource.MustParse("32Gi")) != 0 {
			t.Errorf("%s allocatable memory = %s", name, q.String())
		}
		if c := findNodeCondition(n.Status.Conditions, v1.NodeReady); c == nil || c.Status != v1.ConditionTrue {
			t.Errorf("%s Ready = %+v", name, c)
		}
		lease, err := env.client.CoordinationV1().Leases(leaseNamespace).Get(env.ctx, name, metav1.GetOptions{})
		if err != nil || *lease.Spec.HolderIdentity != name || lease.Spec.RenewTime == nil {
			t.Errorf("%s lease = %+v, %v", name, lease, err)
		}
	}
	// Registering again (nodesim restart) adopts the nodes.
	if err := m.Register(env.ctx); err != nil {
		t.Fatal(err)
	}

	// The TaintNodesByCondition admission adds not-ready taints: removed.
	n, _ := env.client.CoreV1().Nodes().Get(env.ctx, "sim-node-0", metav1.GetOptions{})
	n.Spec.Taints = []v1.Taint{
		{Key: taintNotReady, Effect: v1.TaintEffectNoSchedule},
		{Key: "example.com/keep", Effect: v1.TaintEffectNoSchedule},
	}
	if _, err := env.client.CoreV1().Nodes().Update(env.ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "node in informer", func() bool {
		n, err := m.lister.Get("sim-node-0")
		return err == nil && len(n.Spec.Taints) == 2
	})
	if err := m.sync(env.ctx, "sim-node-0"); err != nil {
		t.Fatal(err)
	}
	n, _ = env.client.CoreV1().Nodes().Get(env.ctx, "sim-node-0", metav1.GetOptions{})
	if len(n.Spec.Taints) != 1 || n.Spec.Taints[0].Key != "example.com/keep" {
		t.Errorf("taints = %+v", n.Spec.Taints)
	}

	// lostNodes: Ready goes Unknown and the lease is no longer renewed.
	env.faults.set(map[string]string{KeyLostNodes: "sim-node-1"})
	lease, _ := env.client.CoordinationV1().Leases(leaseNamespace).Get(env.ctx, "sim-node-1", metav1.GetOptions{})
	m.mu.Lock()
	m.lastBeat["sim-node-1"] = time.Time{}
	m.mu.Unlock()
	if err := m.sync(env.ctx, "sim-node-1"); err != nil {
		t.Fatal(err)
	}
	n, _ = env.client.CoreV1().Nodes().Get(env.ctx, "sim-node-1", metav1.GetOptions{})
	if c := findNodeCondition(n.Status.Conditions, v1.NodeReady); c == nil || c.Status != v1.ConditionUnknown || c.Reason != "NodeStatusUnknown" {
		t.Errorf("lost node Ready = %+v", c)
	}
	after, _ := env.client.CoordinationV1().Leases(leaseNamespace).Get(env.ctx, "sim-node-1", metav1.GetOptions{})
	if !after.Spec.RenewTime.Equal(lease.Spec.RenewTime) {
		t.Error("lease of a lost node renewed")
	}

	// Recovery: Ready again.
	env.faults.set(nil)
	if err := m.sync(env.ctx, "sim-node-1"); err != nil {
		t.Fatal(err)
	}
	n, _ = env.client.CoreV1().Nodes().Get(env.ctx, "sim-node-1", metav1.GetOptions{})
	if c := findNodeCondition(n.Status.Conditions, v1.NodeReady); c == nil || c.Status != v1.ConditionTrue {
		t.Errorf("recovered node Ready = %+v", c)
	}
}

package main

import (
	"strconv"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestNodesRegisterHeartbeatTaintsAndLoss(t *testing.T) {
	env := newTestEnv(t)
	m := NewNodeManager(env.client, env.factory, testNodes, env.faults, env.log)
	m.KubeletPort = 40123
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
		if p := n.Status.DaemonEndpoints.KubeletEndpoint.Port; p != 40123 {
			t.Errorf("%s kubelet port = %d, want the log server's 40123", name, p)
		}
		lease, err := env.client.CoordinationV1().Leases(leaseNamespace).Get(env.ctx, name, metav1.GetOptions{})
		if err != nil || *lease.Spec.HolderIdentity != name || lease.Spec.RenewTime == nil {
			t.Errorf("%s lease = %+v, %v", name, lease, err)
		}
	}
	// Registering again (nodesim restart) adopts the nodes, and publishes
	// the new log server's port.
	m.KubeletPort = 40124
	if err := m.Register(env.ctx); err != nil {
		t.Fatal(err)
	}
	if n, _ := env.client.CoreV1().Nodes().Get(env.ctx, "sim-node-2", metav1.GetOptions{}); n.Status.DaemonEndpoints.KubeletEndpoint.Port != 40124 {
		t.Errorf("kubelet port after re-registration = %d", n.Status.DaemonEndpoints.KubeletEndpoint.Port)
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

	// Recovery: Ready again, and the heartbeat restores the port that
	// someone cleared meanwhile.
	n, _ = env.client.CoreV1().Nodes().Get(env.ctx, "sim-node-1", metav1.GetOptions{})
	n.Status.DaemonEndpoints.KubeletEndpoint.Port = 0
	if _, err := env.client.CoreV1().Nodes().UpdateStatus(env.ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	env.faults.set(nil)
	if err := m.sync(env.ctx, "sim-node-1"); err != nil {
		t.Fatal(err)
	}
	n, _ = env.client.CoreV1().Nodes().Get(env.ctx, "sim-node-1", metav1.GetOptions{})
	if c := findNodeCondition(n.Status.Conditions, v1.NodeReady); c == nil || c.Status != v1.ConditionTrue {
		t.Errorf("recovered node Ready = %+v", c)
	}
	if p := n.Status.DaemonEndpoints.KubeletEndpoint.Port; p != 40124 {
		t.Errorf("kubelet port after a heartbeat = %d, want 40124", p)
	}
}

// runNodes registers the test nodes and runs the manager (event-driven, as in
// nodesim), with lostNodes set to lost before the nodes register.
func runNodes(t *testing.T, lost string) (*NodeManager, *testEnv) {
	t.Helper()
	env := newTestEnv(t)
	m := NewNodeManager(env.client, env.factory, testNodes, env.faults, env.log)
	env.faults.OnChange(m.FaultsChanged)
	if lost != "" {
		env.faults.set(map[string]string{KeyLostNodes: lost})
	}
	if err := m.Register(env.ctx); err != nil {
		t.Fatal(err)
	}
	env.start(t)
	go m.Run(env.ctx)
	return m, env
}

func nodeReady(env *testEnv, name string) bool {
	n, err := env.client.CoreV1().Nodes().Get(env.ctx, name, metav1.GetOptions{})
	if err != nil {
		return false
	}
	c := findNodeCondition(n.Status.Conditions, v1.NodeReady)
	return c != nil && c.Status == v1.ConditionTrue
}

func nodeExists(t *testing.T, env *testEnv, name string) bool {
	t.Helper()
	_, err := env.client.CoreV1().Nodes().Get(env.ctx, name, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return err == nil
}

// deleteNode deletes a node as `kubectl delete node` does and waits until
// the manager's informer has seen it go.
func deleteNode(t *testing.T, m *NodeManager, env *testEnv, name string) {
	t.Helper()
	if err := env.client.CoreV1().Nodes().Delete(env.ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, name+" gone from the informer", func() bool {
		_, err := m.lister.Get(name)
		return apierrors.IsNotFound(err)
	})
}

func TestLostNodeDeletedStaysDeleted(t *testing.T) {
	m, env := runNodes(t, "")
	env.faults.set(map[string]string{KeyLostNodes: "sim-node-1"})
	eventually(t, 5*time.Second, "sim-node-1 marked lost", func() bool {
		n, err := env.client.CoreV1().Nodes().Get(env.ctx, "sim-node-1", metav1.GetOptions{})
		if err != nil {
			return false
		}
		c := findNodeCondition(n.Status.Conditions, v1.NodeReady)
		return c != nil && c.Status == v1.ConditionUnknown
	})
	deleteNode(t, m, env, "sim-node-1")
	// Event-driven sync, a periodic one and a nodesim restart: none registers it.
	time.Sleep(200 * time.Millisecond)
	if err := m.sync(env.ctx, "sim-node-1"); err != nil {
		t.Fatal(err)
	}
	if err := m.Register(env.ctx); err != nil {
		t.Fatal(err)
	}
	if nodeExists(t, env, "sim-node-1") {
		t.Fatal("a deleted lost node was registered again")
	}
	if !nodeReady(env, "sim-node-0") || !nodeReady(env, "sim-node-2") {
		t.Error("the other nodes are not Ready")
	}
}

func TestLostNodeReRegistersWhenNoLongerLost(t *testing.T) {
	m, env := runNodes(t, "")
	env.faults.set(map[string]string{KeyLostNodes: "sim-node-1,sim-node-2"})
	deleteNode(t, m, env, "sim-node-1")
	deleteNode(t, m, env, "sim-node-2")
	// Only sim-node-1 leaves the list: it alone comes back, Ready, with a lease.
	env.faults.set(map[string]string{KeyLostNodes: "sim-node-2"})
	eventually(t, 5*time.Second, "sim-node-1 registered and Ready", func() bool { return nodeReady(env, "sim-node-1") })
	n, _ := env.client.CoreV1().Nodes().Get(env.ctx, "sim-node-1", metav1.GetOptions{})
	if n.Labels[v1.LabelHostname] != "sim-node-1" {
		t.Errorf("labels = %v", n.Labels)
	}
	if _, err := env.client.CoordinationV1().Leases(leaseNamespace).Get(env.ctx, "sim-node-1", metav1.GetOptions{}); err != nil {
		t.Errorf("lease: %v", err)
	}
	time.Sleep(200 * time.Millisecond)
	if nodeExists(t, env, "sim-node-2") {
		t.Fatal("sim-node-2, still lost, was registered again")
	}
	env.faults.set(nil)
	eventually(t, 5*time.Second, "sim-node-2 registered and Ready", func() bool { return nodeReady(env, "sim-node-2") })
}

func TestHealthyDeletedNodeReRegisters(t *testing.T) {
	m, env := runNodes(t, "")
	// The informer must be watching before the delete: the fake clientset does not replay a
	// change made between the informer's list and its watch, and a missed delete is noticed
	// only at the next heartbeat, after this test's wait (it failed so under load).
	// So: an update, written again until the informer shows one (a write made before its watch
	// began is never shown).
	writes := 0
	eventually(t, 5*time.Second, "the node informer to see an update", func() bool {
		if cached, err := m.lister.Get("sim-node-0"); err == nil && cached.Labels["nodesim.test/watched"] != "" {
			return true
		}
		n, err := env.client.CoreV1().Nodes().Get(env.ctx, "sim-node-0", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		writes++
		n.Labels["nodesim.test/watched"] = strconv.Itoa(writes)
		if _, err := env.client.CoreV1().Nodes().Update(env.ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		return false
	})
	// The delete is synchronous: any node found afterwards was registered again.
	if err := env.client.CoreV1().Nodes().Delete(env.ctx, "sim-node-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "sim-node-0 registered again and Ready", func() bool { return nodeReady(env, "sim-node-0") })
}

func TestRegisterSkipsMissingLostNode(t *testing.T) {
	// nodesim (re)starts while sim-node-1 is lost and its object is gone.
	_, env := runNodes(t, "sim-node-1")
	if nodeExists(t, env, "sim-node-1") {
		t.Fatal("a lost node with no object was created at registration")
	}
	if !nodeReady(env, "sim-node-0") {
		t.Error("sim-node-0 not Ready")
	}
}

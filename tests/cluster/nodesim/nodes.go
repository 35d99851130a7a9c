package main

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
)

const (
	// HeartbeatInterval is how often node status and leases are renewed.
	HeartbeatInterval = 10 * time.Second
	leaseNamespace    = "kube-node-lease"
	leaseDuration     = 40
	// NodeIP is the (only) address of every simulated node.
	NodeIP = "127.0.0.1"

	taintNotReady    = "node.kubernetes.io/not-ready"
	taintUnreachable = "node.kubernetes.io/unreachable"
)

// NodeManager registers the simulated nodes and keeps them alive.
type NodeManager struct {
	client kubernetes.Interface
	lister corelisters.NodeLister
	names  []string
	faults *Faults
	log    *slog.Logger
	queue  workqueue.TypedRateLimitingInterface[string]

	// KubeletPort is the port of the log server (LogServer), published as
	// status.daemonEndpoints.kubeletEndpoint, where kube-apiserver sends
	// pods/log requests. Set it before Register.
	KubeletPort int32

	mu       sync.Mutex
	lastBeat map[string]time.Time
	gone     map[string]bool // lost nodes whose object was deleted (and not re-registered)
}

// NewNodeManager wires the node informer.
func NewNodeManager(client kubernetes.Interface, factory informers.SharedInformerFactory, names []string, faults *Faults, log *slog.Logger) *NodeManager {
	m := &NodeManager{
		client:   client,
		names:    names,
		faults:   faults,
		log:      log.With("component", "nodes"),
		queue:    newQueue("nodes", 10*time.Second),
		lastBeat: map[string]time.Time{},
		gone:     map[string]bool{},
	}
	inf := factory.Core().V1().Nodes()
	m.lister = inf.Lister()
	enqueue := func(obj any) {
		if key, ok := keyOf(obj); ok && slices.Contains(m.names, key) {
			m.queue.Add(key)
		}
	}
	_, _ = inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
		DeleteFunc: enqueue,
	})
	return m
}

// NodeLabels returns the labels of a simulated node.
func NodeLabels(name string) map[string]string {
	return map[string]string{
		v1.LabelHostname:        name,
		v1.LabelOSStable:        "linux",
		v1.LabelArchStable:      "amd64",
		v1.LabelTopologyZone:    "sim",
		"stsresize.dev/nodesim": "true",
	}
}

func nodeResources() v1.ResourceList {
	return v1.ResourceList{
		v1.ResourceCPU:              resource.MustParse("8"),
		v1.ResourceMemory:           resource.MustParse("32Gi"),
		v1.ResourcePods:             resource.MustParse("110"),
		v1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
	}
}

// readyConditions are the conditions of a healthy node.
func readyConditions(now metav1.Time, prev []v1.NodeCondition) []v1.NodeCondition {
	conds := []v1.NodeCondition{
		{Type: v1.NodeMemoryPressure, Status: v1.ConditionFalse, Reason: "KubeletHasSufficientMemory", Message: "nodesim"},
		{Type: v1.NodeDiskPressure, Status: v1.ConditionFalse, Reason: "KubeletHasNoDiskPressure", Message: "nodesim"},
		{Type: v1.NodePIDPressure, Status: v1.ConditionFalse, Reason: "KubeletHasSufficientPID", Message: "nodesim"},
		{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "KubeletReady", Message: "nodesim is posting ready status"},
	}
	return stampConditions(conds, prev, now)
}

// lostConditions are what the node-lifecycle controller would write for a
// node whose kubelet stopped posting status.
func lostConditions(now metav1.Time, prev []v1.NodeCondition) []v1.NodeCondition {
	var conds []v1.NodeCondition
	for _, t := range []v1.NodeConditionType{v1.NodeMemoryPressure, v1.NodeDiskPressure, v1.NodePIDPressure, v1.NodeReady} {
		conds = append(conds, v1.NodeCondition{
			Type: t, Status: v1.ConditionUnknown, Reason: "NodeStatusUnknown",
			Message: "Kubelet stopped posting node status (nodesim fault: lostNodes).",
		})
	}
	conds = stampConditions(conds, prev, now)
	// A lost kubelet does not heartbeat: keep the previous heartbeat times.
	for i := range conds {
		if p := findNodeCondition(prev, conds[i].Type); p != nil {
			conds[i].LastHeartbeatTime = p.LastHeartbeatTime
		}
	}
	return conds
}

func stampConditions(conds, prev []v1.NodeCondition, now metav1.Time) []v1.NodeCondition {
	for i := range conds {
		conds[i].LastHeartbeatTime = now
		conds[i].LastTransitionTime = now
		if p := findNodeCondition(prev, conds[i].Type); p != nil && p.Status == conds[i].Status {
			conds[i].LastTransitionTime = p.LastTransitionTime
		}
	}
	return conds
}

func findNodeCondition(conds []v1.NodeCondition, t v1.NodeConditionType) *v1.NodeCondition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

// Register creates (or adopts) every node, posts a Ready status and creates
// its lease. A lost node (lostNodes) is adopted if its object exists, but it
// is neither created nor heartbeated.
func (m *NodeManager) Register(ctx context.Context) error {
	for _, name := range m.names {
		lost := m.faults.Current().NodeLost(name)
		if err := m.register(ctx, name, !lost); err != nil {
			return fmt.Errorf("node %s: %w", name, err)
		}
		if !lost {
			if err := m.heartbeat(ctx, name); err != nil {
				return fmt.Errorf("node %s: %w", name, err)
			}
		}
	}
	return nil
}

// register adopts the node object, or creates it if create is set. A missing
// node that must not be created is remembered in m.gone and is no error.
func (m *NodeManager) register(ctx context.Context, name string, create bool) error {
	nodes := m.client.CoreV1().Nodes()
	node, err := nodes.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) && !create {
		m.markGone(name)
		return nil
	}
	if apierrors.IsNotFound(err) {
		node, err = nodes.Create(ctx, &v1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: NodeLabels(name)},
		}, metav1.CreateOptions{})
		if err == nil {
			m.log.Info("node registered", "node", name)
		}
	}
	if err != nil {
		return err
	}
	m.mu.Lock()
	delete(m.gone, name)
	m.mu.Unlock()
	// Adopted node (nodesim restarted): make sure the labels are there.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		missing := false
		for k, v := range NodeLabels(name) {
			if node.Labels[k] != v {
				missing = true
			}
		}
		if !missing {
			return nil
		}
		node = node.DeepCopy()
		if node.Labels == nil {
			node.Labels = map[string]string{}
		}
		for k, v := range NodeLabels(name) {
			node.Labels[k] = v
		}
		updated, err := nodes.Update(ctx, node, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			if fresh, gerr := nodes.Get(ctx, name, metav1.GetOptions{}); gerr == nil {
				node = fresh
			}
		} else if err == nil {
			node = updated
		}
		return err
	}); err != nil {
		return err
	}
	return nil
}

// heartbeat posts a fresh Ready status and renews the lease.
func (m *NodeManager) heartbeat(ctx context.Context, name string) error {
	now := metav1.Now()
	nodes := m.client.CoreV1().Nodes()
	var uid string
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node, err := nodes.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		uid = string(node.UID)
		node = node.DeepCopy()
		node.Status.Capacity = nodeResources()
		node.Status.Allocatable = nodeResources()
		node.Status.Conditions = readyConditions(now, node.Status.Conditions)
		node.Status.Addresses = []v1.NodeAddress{
			{Type: v1.NodeInternalIP, Address: NodeIP},
			{Type: v1.NodeHostName, Address: name},
		}
		node.Status.DaemonEndpoints.KubeletEndpoint.Port = m.KubeletPort
		node.Status.NodeInfo = v1.NodeSystemInfo{
			MachineID:               "nodesim-" + name,
			SystemUUID:              "nodesim-" + name,
			BootID:                  "nodesim-" + uid,
			KernelVersion:           "nodesim",
			OSImage:                 "nodesim",
			ContainerRuntimeVersion: "nodesim://1",
			KubeletVersion:          "v1.37.2",
			OperatingSystem:         "linux",
			Architecture:            "amd64",
		}
		_, err = nodes.UpdateStatus(ctx, node, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("updating node status: %w", err)
	}
	if err := m.renewLease(ctx, name, uid, now); err != nil {
		return fmt.Errorf("renewing lease: %w", err)
	}
	m.mu.Lock()
	m.lastBeat[name] = now.Time
	m.mu.Unlock()
	return nil
}

func (m *NodeManager) renewLease(ctx context.Context, name, nodeUID string, now metav1.Time) error {
	leases := m.client.CoordinationV1().Leases(leaseNamespace)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		lease, err := leases.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			// The apiserver creates kube-node-lease shortly after it starts.
			_, nsErr := m.client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{
				ObjectMeta: metav1.ObjectMeta{Name: leaseNamespace},
			}, metav1.CreateOptions{})
			if nsErr != nil && !apierrors.IsAlreadyExists(nsErr) {
				return nsErr
			}
			_, err = leases.Create(ctx, &coordinationv1.Lease{
				ObjectMeta: metav1.ObjectMeta{
					Name: name, Namespace: leaseNamespace,
					OwnerReferences: []metav1.OwnerReference{{
						APIVersion: "v1", Kind: "Node", Name: name, UID: types.UID(nodeUID),
					}},
				},
				Spec: coordinationv1.LeaseSpec{
					HolderIdentity:       ptr.To(name),
					LeaseDurationSeconds: ptr.To[int32](leaseDuration),
					RenewTime:            &metav1.MicroTime{Time: now.Time},
				},
			}, metav1.CreateOptions{})
			return err
		}
		if err != nil {
			return err
		}
		lease = lease.DeepCopy()
		lease.Spec.HolderIdentity = ptr.To(name)
		lease.Spec.LeaseDurationSeconds = ptr.To[int32](leaseDuration)
		lease.Spec.RenewTime = &metav1.MicroTime{Time: now.Time}
		_, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
		return err
	})
}

// markLost writes the Unknown conditions of a lost node (once).
func (m *NodeManager) markLost(ctx context.Context, name string) error {
	nodes := m.client.CoreV1().Nodes()
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node, err := nodes.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil // deleted meanwhile; its delete event syncs it again
		}
		if err != nil {
			return err
		}
		if c := findNodeCondition(node.Status.Conditions, v1.NodeReady); c != nil && c.Status == v1.ConditionUnknown {
			return nil
		}
		node = node.DeepCopy()
		node.Status.Conditions = lostConditions(metav1.Now(), node.Status.Conditions)
		if _, err := nodes.UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
			return err
		}
		m.log.Info("node marked lost", "node", name)
		return nil
	})
}

// removeNotReadyTaints removes the not-ready/unreachable taints that the
// API server's admission or the node-lifecycle controller put on a node.
func (m *NodeManager) removeNotReadyTaints(ctx context.Context, name string) error {
	nodes := m.client.CoreV1().Nodes()
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node, err := nodes.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		keep := slices.DeleteFunc(slices.Clone(node.Spec.Taints), func(t v1.Taint) bool {
			return t.Key == taintNotReady || t.Key == taintUnreachable
		})
		if len(keep) == len(node.Spec.Taints) {
			return nil
		}
		node = node.DeepCopy()
		node.Spec.Taints = keep
		if _, err := nodes.Update(ctx, node, metav1.UpdateOptions{}); err != nil {
			return err
		}
		m.log.Info("removed not-ready taints", "node", name)
		return nil
	})
}

func hasNotReadyTaint(node *v1.Node) bool {
	for _, t := range node.Spec.Taints {
		if t.Key == taintNotReady || t.Key == taintUnreachable {
			return true
		}
	}
	return false
}

// markGone records that a lost node's object is missing (logged once).
func (m *NodeManager) markGone(name string) {
	m.mu.Lock()
	first := !m.gone[name]
	m.gone[name] = true
	m.mu.Unlock()
	if first {
		m.log.Info("lost node has no node object; not registering it while it is lost", "node", name)
	}
}

func (m *NodeManager) sync(ctx context.Context, name string) error {
	node, err := m.lister.Get(name)
	if apierrors.IsNotFound(err) {
		// Someone deleted the node. A healthy one re-registers, like a
		// kubelet would; a lost one is a dead machine and stays deleted
		// until it leaves lostNodes.
		if m.faults.Current().NodeLost(name) {
			m.markGone(name)
			return nil
		}
		m.log.Info("node object missing, re-registering", "node", name)
		if err := m.register(ctx, name, true); err != nil {
			return err
		}
		return m.heartbeat(ctx, name)
	}
	if err != nil {
		return err
	}
	if m.faults.Current().NodeLost(name) {
		return m.markLost(ctx, name)
	}
	if hasNotReadyTaint(node) {
		if err := m.removeNotReadyTaints(ctx, name); err != nil {
			return err
		}
	}
	m.mu.Lock()
	last := m.lastBeat[name]
	m.mu.Unlock()
	ready := findNodeCondition(node.Status.Conditions, v1.NodeReady)
	if time.Since(last) >= HeartbeatInterval-time.Second || ready == nil || ready.Status != v1.ConditionTrue {
		if err := m.heartbeat(ctx, name); err != nil {
			return err
		}
	}
	return nil
}

// Run processes node events and heartbeats every HeartbeatInterval.
func (m *NodeManager) Run(ctx context.Context) {
	go func() {
		t := time.NewTicker(HeartbeatInterval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				for _, n := range m.names {
					m.queue.Add(n)
				}
			}
		}
	}()
	runQueue(ctx, m.queue, 2, m.sync, func(key string, err error) {
		m.log.Error("node sync failed", "node", key, "err", err)
	})
}

// FaultsChanged reacts to lostNodes changes immediately.
func (m *NodeManager) FaultsChanged(old, cur FaultSet) {
	for _, n := range m.names {
		if old.NodeLost(n) != cur.NodeLost(n) {
			if !cur.NodeLost(n) {
				m.log.Info("node recovered from lostNodes fault", "node", n)
			}
			m.queue.Add(n)
		}
	}
}

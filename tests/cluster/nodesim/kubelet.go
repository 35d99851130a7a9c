package main

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
)

// KubeletConfig configures the simulated kubelet.
type KubeletConfig struct {
	Client    kubernetes.Interface
	Factory   informers.SharedInformerFactory
	Nodes     []string
	Workdir   string
	Faults    *Faults
	Runner    *Runner
	Recorder  record.EventRecorder
	Log       *slog.Logger
	APIServer string // exposed to containers as KUBERNETES_SERVICE_HOST/PORT
}

// Kubelet runs the pods bound to the simulated nodes: one podWorker per pod.
type Kubelet struct {
	client    kubernetes.Interface
	podLister corelisters.PodLister
	nodes     []string
	workdir   string
	faults    *Faults
	runner    *Runner
	recorder  record.EventRecorder
	log       *slog.Logger
	apiServer string
	getter    ObjectGetter
	volumes   *VolumeResolver
	images    ImageStore
	queue     workqueue.TypedRateLimitingInterface[string]

	mu       sync.Mutex
	workers  map[string]*podWorker // by namespace/name
	finished map[types.UID]bool    // pods that reached a terminal phase here
	ips      map[string]int        // per-node pod IP counter
	shutdown bool

	runsMu   sync.Mutex
	liveRuns map[string]<-chan struct{} // container ID → closed when that run's process has exited
}

// NewKubelet wires the pod informer.
func NewKubelet(cfg KubeletConfig) *Kubelet {
	k := &Kubelet{
		client:    cfg.Client,
		nodes:     cfg.Nodes,
		workdir:   cfg.Workdir,
		faults:    cfg.Faults,
		runner:    cfg.Runner,
		recorder:  cfg.Recorder,
		log:       cfg.Log.With("component", "kubelet"),
		apiServer: cfg.APIServer,
		getter:    clientGetter{cfg.Client},
		images:    ImageStore{Dir: filepath.Join(cfg.Workdir, "images")},
		queue:     newQueue("pods", 5*time.Second),
		workers:   map[string]*podWorker{},
		finished:  map[types.UID]bool{},
		ips:       map[string]int{},
		liveRuns:  map[string]<-chan struct{}{},
	}
	pods := cfg.Factory.Core().V1().Pods()
	k.podLister = pods.Lister()
	k.volumes = &VolumeResolver{
		Client:    cfg.Client,
		PVCLister: cfg.Factory.Core().V1().PersistentVolumeClaims().Lister(),
		PVLister:  cfg.Factory.Core().V1().PersistentVolumes().Lister(),
		Get:       k.getter,
		Log:       k.log,
	}
	_, _ = pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { k.enqueue(obj, false) },
		UpdateFunc: func(_, obj any) { k.enqueue(obj, false) },
		DeleteFunc: func(obj any) { k.enqueue(obj, true) },
	})
	return k
}

func (k *Kubelet) ownsNode(name string) bool { return slices.Contains(k.nodes, name) }

func (k *Kubelet) enqueue(obj any, deleted bool) {
	key, ok := keyOf(obj)
	if !ok {
		return
	}
	if pod, isPod := obj.(*v1.Pod); isPod && !deleted && !k.ownsNode(pod.Spec.NodeName) {
		k.mu.Lock()
		_, running := k.workers[key]
		k.mu.Unlock()
		if !running {
			return
		}
	}
	k.queue.Add(key)
}

// Run processes pod events until ctx is done.
func (k *Kubelet) Run(ctx context.Context) {
	runQueue(ctx, k.queue, 4, k.sync, func(key string, err error) {
		k.log.Error("pod sync failed", "pod", key, "err", err)
	})
}

// allocPodIPLocked allocates a fake pod IP, 127.<node index + 1>.x.y
// (k.mu held).
func (k *Kubelet) allocPodIPLocked(node string) string {
	inUse := map[string]bool{}
	if pods, err := k.podLister.List(labels.Everything()); err == nil {
		for _, p := range pods {
			inUse[p.Status.PodIP] = true
		}
	}
	idx := slices.Index(k.nodes, node)
	for {
		n := k.ips[node]
		k.ips[node] = n + 1
		ip := fmt.Sprintf("127.%d.%d.%d", idx+1, (n/254)%256, n%254+1)
		if !inUse[ip] || n >= 254*256 {
			return ip
		}
	}
}

func (k *Kubelet) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	pod, err := k.podLister.Pods(ns).Get(name)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	k.mu.Lock()
	w := k.workers[key]
	shutdown := k.shutdown
	k.mu.Unlock()
	if shutdown {
		return nil
	}

	if pod == nil || !k.ownsNode(pod.Spec.NodeName) || (w != nil && w.uid != pod.UID) {
		if w != nil {
			if w.stopReason() == stopNone {
				w.log.Info("pod gone or replaced, stopping its worker")
			}
			w.stop(stopGone, 0)
		}
		return nil // a replacement worker starts when the old one has exited
	}
	if k.faults.Current().NodeLost(pod.Spec.NodeName) {
		return nil // lost kubelets do nothing at all
	}
	if w != nil && w.stopReason() >= stopFreeze {
		return nil // re-queued when it has exited
	}

	if pod.DeletionTimestamp != nil {
		grace := maxKillGrace
		if g := pod.DeletionGracePeriodSeconds; g != nil && time.Duration(*g)*time.Second < grace {
			grace = time.Duration(*g) * time.Second
		}
		if w != nil {
			if w.stopReason() < stopDelete {
				w.log.Info("pod deletion requested, killing containers", "grace", grace)
			}
			w.stop(stopDelete, grace)
			return nil
		}
		return k.finaliseDeletion(ctx, pod)
	}

	if w != nil || pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed {
		return nil
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.finished[pod.UID] || k.workers[key] != nil {
		return nil
	}
	ip := pod.Status.PodIP
	if ip == "" {
		ip = k.allocPodIPLocked(pod.Spec.NodeName)
	}
	w = newPodWorker(k, key, pod, ip)
	k.workers[key] = w
	go w.run()
	return nil
}

// finaliseDeletion deletes a pod that has no running worker, with grace 0.
func (k *Kubelet) finaliseDeletion(ctx context.Context, pod *v1.Pod) error {
	uid := pod.UID
	err := k.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: ptr.To[int64](0),
		Preconditions:      &metav1.Preconditions{UID: &uid},
	})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	if err == nil {
		k.log.Info("pod deleted", "pod", klogKey(pod), "uid", string(uid), "phase", pod.Status.Phase)
	}
	return err
}

// workerExited is called by a worker when it is done.
func (k *Kubelet) workerExited(w *podWorker) {
	k.mu.Lock()
	if k.workers[w.key] == w {
		delete(k.workers, w.key)
	}
	w.mu.Lock()
	if w.completed {
		k.finished[w.uid] = true
	}
	w.mu.Unlock()
	shutdown := k.shutdown
	k.mu.Unlock()
	if !shutdown {
		k.queue.Add(w.key) // pick up whatever happened meanwhile
	}
}

// FaultsChanged kills the pods of newly lost nodes and resyncs the pods of
// recovered ones.
func (k *Kubelet) FaultsChanged(old, cur FaultSet) {
	for _, n := range k.nodes {
		switch {
		case cur.NodeLost(n) && !old.NodeLost(n):
			k.mu.Lock()
			for _, w := range k.workers {
				if w.node == n {
					w.log.Info("node lost, killing pod processes")
					w.stop(stopFreeze, 0)
				}
			}
			k.mu.Unlock()
		case !cur.NodeLost(n) && old.NodeLost(n):
			pods, _ := k.podLister.List(labels.Everything())
			for _, p := range pods {
				if p.Spec.NodeName == n {
					k.enqueue(p, false)
				}
			}
		}
	}
}

// Shutdown kills every pod process without touching the API objects (like a
// kubelet that stops) and waits for the workers to exit.
func (k *Kubelet) Shutdown() {
	k.mu.Lock()
	k.shutdown = true
	workers := make([]*podWorker, 0, len(k.workers))
	for _, w := range k.workers {
		workers = append(workers, w)
	}
	k.mu.Unlock()
	for _, w := range workers {
		w.stop(stopFreeze, 0)
	}
	timeout := time.After(2 * maxKillGrace)
	for _, w := range workers {
		select {
		case <-w.done:
		case <-timeout:
			k.log.Warn("pod workers did not exit in time")
			return
		}
	}
}

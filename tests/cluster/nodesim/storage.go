package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
)

// Storage classes created by nodesim.
const (
	ClassFixed      = "sim-fixed"
	ClassExpandable = "sim-expandable"
)

// Annotations shared with the persistent-volume controller and the
// external-provisioner conventions.
const (
	annStorageProvisioner     = "volume.kubernetes.io/storage-provisioner"
	annBetaStorageProvisioner = "volume.beta.kubernetes.io/storage-provisioner"
	annSelectedNode           = "volume.kubernetes.io/selected-node"
	annProvisionedBy          = "pv.kubernetes.io/provisioned-by"
	annBetaStorageClass       = "volume.beta.kubernetes.io/storage-class"
	annDefaultClass           = "storageclass.kubernetes.io/is-default-class"
)

// Storage is the dynamic provisioner (and deleter) for nodesim's classes.
type Storage struct {
	client      kubernetes.Interface
	classLister storagelisters.StorageClassLister
	pvcLister   corelisters.PersistentVolumeClaimLister
	pvLister    corelisters.PersistentVolumeLister
	volumesDir  string
	nodes       []string
	faults      *Faults
	recorder    record.EventRecorder
	log         *slog.Logger
	claims      workqueue.TypedRateLimitingInterface[string]
	volumes     workqueue.TypedRateLimitingInterface[string]

	mu       sync.Mutex
	deferred map[string]bool // PVs whose reclaim waits for a lost node (logged once)
}

// NewStorage wires the StorageClass, PVC and PV informers.
func NewStorage(client kubernetes.Interface, factory informers.SharedInformerFactory, volumesDir string, nodes []string, faults *Faults, recorder record.EventRecorder, log *slog.Logger) *Storage {
	s := &Storage{
		client:      client,
		classLister: factory.Storage().V1().StorageClasses().Lister(),
		pvcLister:   factory.Core().V1().PersistentVolumeClaims().Lister(),
		pvLister:    factory.Core().V1().PersistentVolumes().Lister(),
		volumesDir:  volumesDir,
		nodes:       nodes,
		faults:      faults,
		recorder:    recorder,
		log:         log.With("component", "storage"),
		claims:      newQueue("claims", 10*time.Second),
		volumes:     newQueue("volumes", 10*time.Second),
		deferred:    map[string]bool{},
	}
	_, _ = factory.Storage().V1().StorageClasses().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { s.enqueueAllClaims() },
	})
	_, _ = factory.Core().V1().PersistentVolumeClaims().Informer().AddEventHandler(handlerFor(s.claims))
	_, _ = factory.Core().V1().PersistentVolumes().Informer().AddEventHandler(handlerFor(s.volumes))
	return s
}

func handlerFor(q workqueue.TypedRateLimitingInterface[string]) cache.ResourceEventHandler {
	add := func(obj any) {
		if key, ok := keyOf(obj); ok {
			q.Add(key)
		}
	}
	return cache.ResourceEventHandlerFuncs{AddFunc: add, UpdateFunc: func(_, obj any) { add(obj) }, DeleteFunc: add}
}

func (s *Storage) enqueueAllClaims() {
	pvcs, _ := s.pvcLister.List(labels.Everything())
	for _, pvc := range pvcs {
		s.claims.Add(klogKey(pvc))
	}
}

// StorageClasses returns the classes nodesim provides.
func StorageClasses() []*storagev1.StorageClass {
	mk := func(name string, expand bool) *storagev1.StorageClass {
		return &storagev1.StorageClass{
			ObjectMeta:           metav1.ObjectMeta{Name: name, Annotations: map[string]string{annDefaultClass: "false"}},
			Provisioner:          ProvisionerName,
			ReclaimPolicy:        ptr.To(v1.PersistentVolumeReclaimDelete),
			VolumeBindingMode:    ptr.To(storagev1.VolumeBindingWaitForFirstConsumer),
			AllowVolumeExpansion: ptr.To(expand),
		}
	}
	return []*storagev1.StorageClass{mk(ClassFixed, false), mk(ClassExpandable, true)}
}

// EnsureStorageClasses creates sim-fixed and sim-expandable (idempotent).
func (s *Storage) EnsureStorageClasses(ctx context.Context) error {
	classes := s.client.StorageV1().StorageClasses()
	for _, want := range StorageClasses() {
		_, err := classes.Create(ctx, want, metav1.CreateOptions{})
		if err == nil {
			s.log.Info("storage class created", "class", want.Name)
			continue
		}
		if !apierrors.IsAlreadyExists(err) {
			return err
		}
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			have, err := classes.Get(ctx, want.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if have.Provisioner != want.Provisioner ||
				ptr.Deref(have.VolumeBindingMode, "") != *want.VolumeBindingMode ||
				ptr.Deref(have.ReclaimPolicy, "") != *want.ReclaimPolicy {
				return fmt.Errorf("storage class %s exists with different immutable fields (provisioner %q)", want.Name, have.Provisioner)
			}
			if ptr.Deref(have.AllowVolumeExpansion, false) == *want.AllowVolumeExpansion {
				return nil
			}
			have = have.DeepCopy()
			have.AllowVolumeExpansion = want.AllowVolumeExpansion
			_, err = classes.Update(ctx, have, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// Run processes claims and volumes until ctx is done.
func (s *Storage) Run(ctx context.Context) {
	done := make(chan struct{})
	go func() {
		runQueue(ctx, s.volumes, 2, s.syncVolume, func(key string, err error) {
			s.log.Error("volume sync failed", "pv", key, "err", err)
		})
		close(done)
	}()
	runQueue(ctx, s.claims, 2, s.syncClaim, func(key string, err error) {
		s.log.Error("claim sync failed", "pvc", key, "err", err)
	})
	<-done
}

// FaultsChanged retries pending claims when failProvisioning changes, and
// deferred reclaims when lostNodes changes.
func (s *Storage) FaultsChanged(old, cur FaultSet) {
	if !slices.Equal(old.FailProvisioning, cur.FailProvisioning) {
		s.enqueueAllClaims()
	}
	if !slices.Equal(old.LostNodes, cur.LostNodes) {
		pvs, _ := s.pvLister.List(labels.Everything())
		for _, pv := range pvs {
			s.volumes.Add(pv.Name)
		}
	}
}

// pvNode is the node a nodesim PV lives on: the hostname in its required
// node affinity ("" if there is none).
func pvNode(pv *v1.PersistentVolume) string {
	if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
		return ""
	}
	for _, t := range pv.Spec.NodeAffinity.Required.NodeSelectorTerms {
		for _, e := range t.MatchExpressions {
			if e.Key == v1.LabelHostname && e.Operator == v1.NodeSelectorOpIn && len(e.Values) == 1 {
				return e.Values[0]
			}
		}
	}
	return ""
}

func claimClass(pvc *v1.PersistentVolumeClaim) string {
	if c, ok := pvc.Annotations[annBetaStorageClass]; ok {
		return c
	}
	return ptr.Deref(pvc.Spec.StorageClassName, "")
}

// provisionTarget decides whether nodesim must provision pvc and on which
// node, following the external-provisioner rules: the PV controller must
// have handed the claim to us (storage-provisioner annotation), and for
// WaitForFirstConsumer classes the scheduler must have picked a node.
func (s *Storage) provisionTarget(pvc *v1.PersistentVolumeClaim) (*storagev1.StorageClass, string, bool) {
	if pvc.Spec.VolumeName != "" || pvc.DeletionTimestamp != nil {
		return nil, "", false
	}
	prov, ok := pvc.Annotations[annStorageProvisioner]
	if !ok {
		prov = pvc.Annotations[annBetaStorageProvisioner]
	}
	if prov != ProvisionerName {
		return nil, "", false
	}
	class, err := s.classLister.Get(claimClass(pvc))
	if err != nil || class.Provisioner != ProvisionerName {
		return nil, "", false
	}
	node := pvc.Annotations[annSelectedNode]
	if ptr.Deref(class.VolumeBindingMode, storagev1.VolumeBindingImmediate) == storagev1.VolumeBindingWaitForFirstConsumer {
		if node == "" {
			return nil, "", false
		}
	} else if node == "" {
		node = s.nodes[0]
	}
	if !slices.Contains(s.nodes, node) {
		s.log.Warn("claim selected a node nodesim does not run, not provisioning", "pvc", klogKey(pvc), "node", node)
		return nil, "", false
	}
	return class, node, true
}

func (s *Storage) syncClaim(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	pvc, err := s.pvcLister.PersistentVolumeClaims(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	class, node, ok := s.provisionTarget(pvc)
	if !ok {
		return nil
	}
	pvName := "pvc-" + string(pvc.UID)
	if _, err := s.pvLister.Get(pvName); err == nil {
		return nil // already provisioned; the PV controller binds it
	}
	if s.faults.Current().ProvisioningFails(class.Name) {
		msg := fmt.Sprintf("nodesim: injected provisioning failure (failProvisioning) for storage class %q", class.Name)
		s.log.Info("provisioning failed by fault injection", "pvc", key, "class", class.Name)
		s.recorder.Event(pvc, v1.EventTypeWarning, "ProvisioningFailed", msg)
		return nil // retried when the fault changes
	}
	s.recorder.Eventf(pvc, v1.EventTypeNormal, "Provisioning", "External provisioner is provisioning volume for claim %q", key)
	dir := filepath.Join(s.volumesDir, pvName)
	if err := os.MkdirAll(dir, 0o777); err != nil {
		s.recorder.Event(pvc, v1.EventTypeWarning, "ProvisioningFailed", err.Error())
		return err
	}
	pv := BuildPV(pvc, class, node, dir)
	_, err = s.client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil // provisioned by an earlier sync; the cache had not caught up
	}
	if err != nil {
		s.recorder.Event(pvc, v1.EventTypeWarning, "ProvisioningFailed", err.Error())
		return err
	}
	storage := pv.Spec.Capacity[v1.ResourceStorage]
	s.log.Info("volume provisioned", "pvc", key, "pv", pvName, "node", node, "class", class.Name, "size", storage.String(), "path", dir)
	s.recorder.Eventf(pvc, v1.EventTypeNormal, "ProvisioningSucceeded", "Successfully provisioned volume %s", pvName)
	return nil
}

// BuildPV is the PersistentVolume nodesim provisions for pvc on node.
func BuildPV(pvc *v1.PersistentVolumeClaim, class *storagev1.StorageClass, node, dir string) *v1.PersistentVolume {
	return &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{
			Name:        "pvc-" + string(pvc.UID),
			Annotations: map[string]string{annProvisionedBy: ProvisionerName},
		},
		Spec: v1.PersistentVolumeSpec{
			Capacity:    v1.ResourceList{v1.ResourceStorage: pvc.Spec.Resources.Requests[v1.ResourceStorage]},
			AccessModes: pvc.Spec.AccessModes,
			ClaimRef: &v1.ObjectReference{
				Kind: "PersistentVolumeClaim", APIVersion: "v1",
				Namespace: pvc.Namespace, Name: pvc.Name, UID: pvc.UID, ResourceVersion: pvc.ResourceVersion,
			},
			PersistentVolumeReclaimPolicy: ptr.Deref(class.ReclaimPolicy, v1.PersistentVolumeReclaimDelete),
			StorageClassName:              class.Name,
			MountOptions:                  class.MountOptions,
			VolumeMode:                    pvc.Spec.VolumeMode,
			VolumeAttributesClassName:     pvc.Spec.VolumeAttributesClassName,
			PersistentVolumeSource: v1.PersistentVolumeSource{
				HostPath: &v1.HostPathVolumeSource{Path: dir, Type: ptr.To(v1.HostPathDirectoryOrCreate)},
			},
			NodeAffinity: &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{
				NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{{
					Key: v1.LabelHostname, Operator: v1.NodeSelectorOpIn, Values: []string{node},
				}}}},
			}},
		},
	}
}

// syncVolume deletes Released volumes provisioned by nodesim whose reclaim
// policy is Delete (the PV controller leaves them to the external deleter).
func (s *Storage) syncVolume(ctx context.Context, name string) error {
	pv, err := s.pvLister.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if pv.Annotations[annProvisionedBy] != ProvisionerName ||
		pv.Status.Phase != v1.VolumeReleased ||
		pv.Spec.PersistentVolumeReclaimPolicy != v1.PersistentVolumeReclaimDelete ||
		pv.Spec.ClaimRef == nil {
		return nil
	}
	ref := pv.Spec.ClaimRef
	if pvc, err := s.pvcLister.PersistentVolumeClaims(ref.Namespace).Get(ref.Name); err == nil &&
		pvc.UID == ref.UID && pvc.Spec.VolumeName == pv.Name {
		return nil // still in use; Released is stale
	}
	if pv.Spec.HostPath == nil {
		return nil
	}
	if node := pvNode(pv); s.faults.Current().NodeLost(node) {
		// The volume is on a lost node's disk: a deleter cannot reach it.
		s.mu.Lock()
		first := !s.deferred[pv.Name]
		s.deferred[pv.Name] = true
		s.mu.Unlock()
		if first {
			s.log.Info("released volume is on a lost node, reclaim deferred", "pv", pv.Name, "node", node)
		}
		return nil // retried when lostNodes changes
	}
	s.mu.Lock()
	delete(s.deferred, pv.Name)
	s.mu.Unlock()
	dir := filepath.Clean(pv.Spec.HostPath.Path)
	if dir != filepath.Join(s.volumesDir, pv.Name) {
		s.log.Error("refusing to delete a volume directory outside the volumes dir", "pv", pv.Name, "path", dir)
		return nil
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("removing %s: %w", dir, err)
	}
	uid := pv.UID
	err = s.client.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &uid},
	})
	if apierrors.IsNotFound(err) {
		return nil // a previous sync got there first
	}
	if err != nil {
		return err
	}
	s.log.Info("released volume deleted", "pv", pv.Name, "claim", ref.Namespace+"/"+ref.Name, "path", dir)
	return nil
}

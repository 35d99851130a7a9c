package main

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
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

// annStorageResizer names the resizer handling a PVC (set by the resize
// controllers on the claim).
const annStorageResizer = "volume.kubernetes.io/storage-resizer"

// Resizer plays the CSI external-resizer for nodesim's expandable classes:
// the volumes are plain directories, so "expanding" is bookkeeping on the PV
// and the PVC, done the way the external-resizer does it (with
// RecoverVolumeExpansionFailure semantics) and without node expansion.
type Resizer struct {
	client      kubernetes.Interface
	pvcLister   corelisters.PersistentVolumeClaimLister
	pvLister    corelisters.PersistentVolumeLister
	classLister storagelisters.StorageClassLister
	faults      *Faults
	recorder    record.EventRecorder
	log         *slog.Logger
	queue       workqueue.TypedRateLimitingInterface[string]
}

// NewResizer wires the PVC informer.
func NewResizer(client kubernetes.Interface, factory informers.SharedInformerFactory, faults *Faults, recorder record.EventRecorder, log *slog.Logger) *Resizer {
	r := &Resizer{
		client:      client,
		pvcLister:   factory.Core().V1().PersistentVolumeClaims().Lister(),
		pvLister:    factory.Core().V1().PersistentVolumes().Lister(),
		classLister: factory.Storage().V1().StorageClasses().Lister(),
		faults:      faults,
		recorder:    recorder,
		log:         log.With("component", "resizer"),
		queue:       newQueue("resize", 30*time.Second),
	}
	_, _ = factory.Core().V1().PersistentVolumeClaims().Informer().AddEventHandler(handlerFor(r.queue))
	return r
}

// Run processes claims until ctx is done.
func (r *Resizer) Run(ctx context.Context) {
	runQueue(ctx, r.queue, 2, r.sync, func(key string, err error) {
		r.log.Error("resize failed", "pvc", key, "err", err)
	})
}

// FaultsChanged retries claims when failResize changes.
func (r *Resizer) FaultsChanged(old, cur FaultSet) {
	if slices.Equal(old.FailResize, cur.FailResize) {
		return
	}
	pvcs, _ := r.pvcLister.List(labels.Everything())
	for _, pvc := range pvcs {
		r.queue.Add(klogKey(pvc))
	}
}

// resizeNeeded returns the requested size if pvc must be expanded by us.
func (r *Resizer) resizeNeeded(pvc *v1.PersistentVolumeClaim) (resource.Quantity, bool) {
	if pvc.Status.Phase != v1.ClaimBound || pvc.Spec.VolumeName == "" {
		return resource.Quantity{}, false
	}
	want, ok := pvc.Spec.Resources.Requests[v1.ResourceStorage]
	if !ok {
		return resource.Quantity{}, false
	}
	have := pvc.Status.Capacity[v1.ResourceStorage]
	if want.Cmp(have) <= 0 {
		return resource.Quantity{}, false
	}
	class, err := r.classLister.Get(claimClass(pvc))
	if err != nil || class.Provisioner != ProvisionerName || !ptr.Deref(class.AllowVolumeExpansion, false) {
		return resource.Quantity{}, false
	}
	return want, true
}

func (r *Resizer) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	pvc, err := r.pvcLister.PersistentVolumeClaims(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if _, ok := r.resizeNeeded(pvc); !ok {
		return nil
	}
	// The cache may still show our own intermediate writes: decide on the
	// live object so that one request leads to one expansion.
	pvc, err = r.client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	want, ok := r.resizeNeeded(pvc)
	if !ok {
		return nil
	}
	pv, err := r.pvLister.Get(pvc.Spec.VolumeName)
	if err != nil {
		return err
	}
	if pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID != pvc.UID {
		return fmt.Errorf("persistent volume %s is not bound to the claim", pv.Name)
	}
	class := claimClass(pvc)
	if r.faults.Current().ResizeFails(class) &&
		pvc.Status.AllocatedResourceStatuses[v1.ResourceStorage] == v1.PersistentVolumeClaimControllerResizeInfeasible &&
		pvc.Status.AllocatedResources.Storage().Cmp(want) == 0 {
		return nil // already failed for this size; retried when the fault changes
	}
	r.log.Info("expanding volume", "pvc", key, "pv", pv.Name, "from", pvc.Status.Capacity.Storage().String(), "to", want.String())
	r.recorder.Eventf(pvc, v1.EventTypeNormal, "Resizing", "External resizer is resizing volume %s", pv.Name)

	// 1. Controller expansion in progress (allocatedResources records the
	//    size being worked on).
	if err := r.updateClaimStatus(ctx, pvc, func(st *v1.PersistentVolumeClaimStatus) {
		setResizeConditions(st, []v1.PersistentVolumeClaimCondition{{
			Type: v1.PersistentVolumeClaimResizing, Status: v1.ConditionTrue, LastTransitionTime: metav1.Now(),
		}})
		setAllocated(st, want, v1.PersistentVolumeClaimControllerResizeInProgress)
	}); err != nil {
		return err
	}

	if r.faults.Current().ResizeFails(class) {
		msg := fmt.Sprintf("nodesim: injected resize failure (failResize) for storage class %q", class)
		r.log.Info("expansion failed by fault injection", "pvc", key, "class", class)
		r.recorder.Event(pvc, v1.EventTypeWarning, "VolumeResizeFailed", msg)
		// Like a CSI driver returning a final error: the claim records the
		// error and the allocated size; it is retried when the fault changes.
		return r.updateClaimStatus(ctx, pvc, func(st *v1.PersistentVolumeClaimStatus) {
			setResizeConditions(st, []v1.PersistentVolumeClaimCondition{{
				Type: v1.PersistentVolumeClaimControllerResizeError, Status: v1.ConditionTrue,
				LastTransitionTime: metav1.Now(), Message: msg,
			}})
			setAllocated(st, want, v1.PersistentVolumeClaimControllerResizeInfeasible)
		})
	}

	// 2. "ControllerExpandVolume": grow the PV.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := r.client.CoreV1().PersistentVolumes().Get(ctx, pv.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if c := cur.Spec.Capacity[v1.ResourceStorage]; c.Cmp(want) >= 0 {
			return nil
		}
		cur = cur.DeepCopy()
		if cur.Spec.Capacity == nil {
			cur.Spec.Capacity = v1.ResourceList{}
		}
		cur.Spec.Capacity[v1.ResourceStorage] = want
		_, err = r.client.CoreV1().PersistentVolumes().Update(ctx, cur, metav1.UpdateOptions{})
		return err
	}); err != nil {
		return fmt.Errorf("updating PV capacity: %w", err)
	}

	// 3. No node expansion needed for a directory: mark the resize finished.
	if err := r.updateClaimStatus(ctx, pvc, func(st *v1.PersistentVolumeClaimStatus) {
		if st.Capacity == nil {
			st.Capacity = v1.ResourceList{}
		}
		st.Capacity[v1.ResourceStorage] = want
		setResizeConditions(st, nil)
		delete(st.AllocatedResourceStatuses, v1.ResourceStorage)
		if len(st.AllocatedResourceStatuses) == 0 {
			st.AllocatedResourceStatuses = nil
		}
		if st.AllocatedResources == nil {
			st.AllocatedResources = v1.ResourceList{}
		}
		st.AllocatedResources[v1.ResourceStorage] = want
	}); err != nil {
		return err
	}
	r.log.Info("volume expanded", "pvc", key, "pv", pv.Name, "size", want.String())
	r.recorder.Eventf(pvc, v1.EventTypeNormal, "VolumeResizeSuccessful", "Resize volume succeeded")
	return nil
}

// updateClaimStatus applies mutate to the claim's status (pvc/status
// subresource) with retry on conflict.
func (r *Resizer) updateClaimStatus(ctx context.Context, pvc *v1.PersistentVolumeClaim, mutate func(*v1.PersistentVolumeClaimStatus)) error {
	claims := r.client.CoreV1().PersistentVolumeClaims(pvc.Namespace)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := claims.Get(ctx, pvc.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if cur.UID != pvc.UID {
			return fmt.Errorf("claim %s was replaced", klogKey(pvc))
		}
		cur = cur.DeepCopy()
		mutate(&cur.Status)
		if _, err := claims.UpdateStatus(ctx, cur, metav1.UpdateOptions{}); err != nil {
			return err
		}
		if cur.Annotations[annStorageResizer] == ProvisionerName {
			return nil
		}
		// Record which resizer handled the claim, as the resizers do.
		fresh, err := claims.Get(ctx, pvc.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		fresh = fresh.DeepCopy()
		if fresh.Annotations == nil {
			fresh.Annotations = map[string]string{}
		}
		fresh.Annotations[annStorageResizer] = ProvisionerName
		_, err = claims.Update(ctx, fresh, metav1.UpdateOptions{})
		return err
	})
}

// setResizeConditions replaces the resize-related conditions with conds.
func setResizeConditions(st *v1.PersistentVolumeClaimStatus, conds []v1.PersistentVolumeClaimCondition) {
	resize := []v1.PersistentVolumeClaimConditionType{
		v1.PersistentVolumeClaimResizing, v1.PersistentVolumeClaimFileSystemResizePending,
		v1.PersistentVolumeClaimControllerResizeError, v1.PersistentVolumeClaimNodeResizeError,
	}
	st.Conditions = slices.DeleteFunc(st.Conditions, func(c v1.PersistentVolumeClaimCondition) bool {
		return slices.Contains(resize, c.Type)
	})
	st.Conditions = append(st.Conditions, conds...)
	if len(st.Conditions) == 0 {
		st.Conditions = nil
	}
}

func setAllocated(st *v1.PersistentVolumeClaimStatus, size resource.Quantity, status v1.ClaimResourceStatus) {
	if st.AllocatedResources == nil {
		st.AllocatedResources = v1.ResourceList{}
	}
	st.AllocatedResources[v1.ResourceStorage] = size
	if st.AllocatedResourceStatuses == nil {
		st.AllocatedResourceStatuses = map[v1.ResourceName]v1.ClaimResourceStatus{}
	}
	st.AllocatedResourceStatuses[v1.ResourceStorage] = status
}

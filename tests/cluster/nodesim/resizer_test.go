package main

import (
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func boundPair(class, capacity, request string) (*v1.PersistentVolumeClaim, *v1.PersistentVolume) {
	pvc := testPVC("data", class, nil)
	pvc.Spec.VolumeName = "pvc-data"
	pvc.Spec.Resources.Requests[v1.ResourceStorage] = resource.MustParse(request)
	pvc.Status = v1.PersistentVolumeClaimStatus{
		Phase:    v1.ClaimBound,
		Capacity: v1.ResourceList{v1.ResourceStorage: resource.MustParse(capacity)},
	}
	pv := &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pvc-data"},
		Spec: v1.PersistentVolumeSpec{
			Capacity:         v1.ResourceList{v1.ResourceStorage: resource.MustParse(capacity)},
			ClaimRef:         &v1.ObjectReference{Namespace: "default", Name: "data", UID: pvc.UID},
			StorageClassName: class,
		},
		Status: v1.PersistentVolumeStatus{Phase: v1.VolumeBound},
	}
	return pvc, pv
}

func newTestResizer(t *testing.T, pvc *v1.PersistentVolumeClaim, pv *v1.PersistentVolume) (*Resizer, *testEnv) {
	t.Helper()
	env := newTestEnv(t, StorageClasses()[0], StorageClasses()[1], pvc, pv)
	r := NewResizer(env.client, env.factory, env.faults, env.recorder, env.log)
	env.start(t)
	return r, env
}

func TestResizeExpandable(t *testing.T) {
	pvc, pv := boundPair(ClassExpandable, "1Gi", "3Gi")
	pvc.Status.Conditions = []v1.PersistentVolumeClaimCondition{{Type: v1.PersistentVolumeClaimResizing, Status: v1.ConditionTrue}}
	r, env := newTestResizer(t, pvc, pv)
	if err := r.sync(env.ctx, "default/data"); err != nil {
		t.Fatal(err)
	}
	want := resource.MustParse("3Gi")
	gotPV, _ := env.client.CoreV1().PersistentVolumes().Get(env.ctx, "pvc-data", metav1.GetOptions{})
	if q := gotPV.Spec.Capacity[v1.ResourceStorage]; q.Cmp(want) != 0 {
		t.Errorf("PV capacity = %s", q.String())
	}
	got, _ := env.client.CoreV1().PersistentVolumeClaims("default").Get(env.ctx, "data", metav1.GetOptions{})
	if q := got.Status.Capacity[v1.ResourceStorage]; q.Cmp(want) != 0 {
		t.Errorf("PVC status capacity = %s", q.String())
	}
	if q := got.Status.AllocatedResources[v1.ResourceStorage]; q.Cmp(want) != 0 {
		t.Errorf("allocatedResources = %v", got.Status.AllocatedResources)
	}
	if got.Status.AllocatedResourceStatuses != nil {
		t.Errorf("allocatedResourceStatuses = %v", got.Status.AllocatedResourceStatuses)
	}
	if len(got.Status.Conditions) != 0 {
		t.Errorf("conditions = %v", got.Status.Conditions)
	}
	if got.Annotations[annStorageResizer] != ProvisionerName {
		t.Errorf("annotations = %v", got.Annotations)
	}
	events := drainEvents(env.recorder)
	if !slices.ContainsFunc(events, func(e string) bool { return strings.HasPrefix(e, "Normal VolumeResizeSuccessful") }) {
		t.Errorf("events = %v", events)
	}
}

func TestResizeIgnoresFixedClassAndShrink(t *testing.T) {
	for name, pair := range map[string][2]string{
		ClassFixed:      {"1Gi", "2Gi"},
		ClassExpandable: {"2Gi", "2Gi"}, // nothing to do
	} {
		t.Run(name, func(t *testing.T) {
			pvc, pv := boundPair(name, pair[0], pair[1])
			r, env := newTestResizer(t, pvc, pv)
			if err := r.sync(env.ctx, "default/data"); err != nil {
				t.Fatal(err)
			}
			gotPV, _ := env.client.CoreV1().PersistentVolumes().Get(env.ctx, "pvc-data", metav1.GetOptions{})
			if q := gotPV.Spec.Capacity[v1.ResourceStorage]; q.Cmp(resource.MustParse(pair[0])) != 0 {
				t.Errorf("PV capacity changed to %s", q.String())
			}
			got, _ := env.client.CoreV1().PersistentVolumeClaims("default").Get(env.ctx, "data", metav1.GetOptions{})
			if got.Status.AllocatedResources != nil {
				t.Errorf("status touched: %+v", got.Status)
			}
		})
	}
}

func TestResizeFault(t *testing.T) {
	pvc, pv := boundPair(ClassExpandable, "1Gi", "2Gi")
	r, env := newTestResizer(t, pvc, pv)
	env.faults.set(map[string]string{KeyFailResize: "*"})
	if err := r.sync(env.ctx, "default/data"); err != nil {
		t.Fatal(err)
	}
	gotPV, _ := env.client.CoreV1().PersistentVolumes().Get(env.ctx, "pvc-data", metav1.GetOptions{})
	if q := gotPV.Spec.Capacity[v1.ResourceStorage]; q.Cmp(resource.MustParse("1Gi")) != 0 {
		t.Errorf("PV capacity changed to %s", q.String())
	}
	got, _ := env.client.CoreV1().PersistentVolumeClaims("default").Get(env.ctx, "data", metav1.GetOptions{})
	if got.Status.AllocatedResourceStatuses[v1.ResourceStorage] != v1.PersistentVolumeClaimControllerResizeInfeasible {
		t.Errorf("allocatedResourceStatuses = %v", got.Status.AllocatedResourceStatuses)
	}
	if len(got.Status.Conditions) != 1 || got.Status.Conditions[0].Type != v1.PersistentVolumeClaimControllerResizeError {
		t.Errorf("conditions = %+v", got.Status.Conditions)
	}
	if q := got.Status.Capacity[v1.ResourceStorage]; q.Cmp(resource.MustParse("1Gi")) != 0 {
		t.Errorf("capacity = %s", q.String())
	}
}

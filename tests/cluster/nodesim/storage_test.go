package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

var testNodes = []string{"sim-node-0", "sim-node-1", "sim-node-2"}

func testPVC(name string, class string, ann map[string]string) *v1.PersistentVolumeClaim {
	return &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: k8stypes.UID("uid-" + slug(name)), Annotations: ann, ResourceVersion: "7"},
		Spec: v1.PersistentVolumeClaimSpec{
			StorageClassName: ptr.To(class),
			AccessModes:      []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			Resources:        v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}},
			VolumeMode:       ptr.To(v1.PersistentVolumeFilesystem),
		},
		Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimPending},
	}
}

func slug(s string) string { return strings.ReplaceAll(s, "/", "-") }

func newTestStorage(t *testing.T, objs ...runtime.Object) (*Storage, *testEnv, string) {
	t.Helper()
	for _, c := range StorageClasses() {
		objs = append(objs, c)
	}
	env := newTestEnv(t, objs...)
	dir := t.TempDir()
	s := NewStorage(env.client, env.factory, dir, testNodes, env.faults, env.recorder, env.log)
	env.start(t)
	return s, env, dir
}

func TestEnsureStorageClassesIdempotent(t *testing.T) {
	s, env, _ := newTestStorage(t)
	for range 2 {
		if err := s.EnsureStorageClasses(env.ctx); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{ClassFixed, ClassExpandable} {
		sc, err := env.client.StorageV1().StorageClasses().Get(env.ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if sc.Provisioner != ProvisionerName || *sc.VolumeBindingMode != storagev1.VolumeBindingWaitForFirstConsumer ||
			*sc.ReclaimPolicy != v1.PersistentVolumeReclaimDelete || *sc.AllowVolumeExpansion != (name == ClassExpandable) ||
			sc.Annotations[annDefaultClass] == "true" {
			t.Errorf("unexpected class %+v", sc)
		}
	}
}

func TestProvisionWithSelectedNode(t *testing.T) {
	pvc := testPVC("data-web-0", ClassExpandable, map[string]string{
		annStorageProvisioner: ProvisionerName,
		annSelectedNode:       "sim-node-1",
	})
	s, env, dir := newTestStorage(t, pvc)
	if err := s.syncClaim(env.ctx, "default/data-web-0"); err != nil {
		t.Fatal(err)
	}
	pvName := "pvc-" + string(pvc.UID)
	pv, err := env.client.CoreV1().PersistentVolumes().Get(env.ctx, pvName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantDir := filepath.Join(dir, pvName)
	if st, err := os.Stat(wantDir); err != nil || !st.IsDir() {
		t.Errorf("volume dir %s not created: %v", wantDir, err)
	}
	if pv.Spec.HostPath == nil || pv.Spec.HostPath.Path != wantDir || *pv.Spec.HostPath.Type != v1.HostPathDirectoryOrCreate {
		t.Errorf("hostPath = %+v", pv.Spec.HostPath)
	}
	if q := pv.Spec.Capacity[v1.ResourceStorage]; q.Cmp(resource.MustParse("1Gi")) != 0 {
		t.Errorf("capacity = %s", q.String())
	}
	ref := pv.Spec.ClaimRef
	if ref == nil || ref.Name != pvc.Name || ref.Namespace != "default" || ref.UID != pvc.UID || ref.Kind != "PersistentVolumeClaim" {
		t.Errorf("claimRef = %+v", ref)
	}
	if pv.Spec.StorageClassName != ClassExpandable || pv.Spec.PersistentVolumeReclaimPolicy != v1.PersistentVolumeReclaimDelete {
		t.Errorf("class/reclaim = %q/%q", pv.Spec.StorageClassName, pv.Spec.PersistentVolumeReclaimPolicy)
	}
	if !slices.Equal(pv.Spec.AccessModes, pvc.Spec.AccessModes) || *pv.Spec.VolumeMode != v1.PersistentVolumeFilesystem {
		t.Errorf("access modes / volume mode = %v / %v", pv.Spec.AccessModes, pv.Spec.VolumeMode)
	}
	if pv.Annotations[annProvisionedBy] != ProvisionerName {
		t.Errorf("annotations = %v", pv.Annotations)
	}
	expr := pv.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions[0]
	if expr.Key != v1.LabelHostname || expr.Operator != v1.NodeSelectorOpIn || !slices.Equal(expr.Values, []string{"sim-node-1"}) {
		t.Errorf("node affinity = %+v", expr)
	}
	events := drainEvents(env.recorder)
	if !slices.ContainsFunc(events, func(e string) bool { return strings.HasPrefix(e, "Normal ProvisioningSucceeded") }) {
		t.Errorf("events = %v", events)
	}

	// Idempotent: a second sync (PV now in the informer) changes nothing.
	eventually(t, 5*time.Second, "PV in informer", func() bool { _, err := s.pvLister.Get(pvName); return err == nil })
	if err := s.syncClaim(env.ctx, "default/data-web-0"); err != nil {
		t.Fatal(err)
	}
}

func TestProvisionSkipsClaimsNotHandedToUs(t *testing.T) {
	cases := map[string]*v1.PersistentVolumeClaim{
		// WaitForFirstConsumer without a selected node: wait for the scheduler.
		"no-selected-node": testPVC("a", ClassFixed, map[string]string{annStorageProvisioner: ProvisionerName}),
		// The PV controller has not handed the claim to an external provisioner.
		"no-provisioner-annotation": testPVC("b", ClassFixed, map[string]string{annSelectedNode: "sim-node-0"}),
		"other-provisioner": testPVC("c", ClassFixed, map[string]string{
			annStorageProvisioner: "example.com/other", annSelectedNode: "sim-node-0"}),
		"foreign-node": testPVC("d", ClassFixed, map[string]string{
			annStorageProvisioner: ProvisionerName, annSelectedNode: "real-node"}),
	}
	for name, pvc := range cases {
		t.Run(name, func(t *testing.T) {
			s, env, _ := newTestStorage(t, pvc)
			if err := s.syncClaim(env.ctx, "default/"+pvc.Name); err != nil {
				t.Fatal(err)
			}
			pvs, _ := env.client.CoreV1().PersistentVolumes().List(env.ctx, metav1.ListOptions{})
			if len(pvs.Items) != 0 {
				t.Errorf("unexpected PV %s", pvs.Items[0].Name)
			}
		})
	}
}

func TestProvisionImmediateClassUsesFirstNode(t *testing.T) {
	immediate := &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: "sim-immediate"},
		Provisioner:       ProvisionerName,
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingImmediate),
		ReclaimPolicy:     ptr.To(v1.PersistentVolumeReclaimRetain),
	}
	pvc := testPVC("imm", "sim-immediate", map[string]string{annBetaStorageProvisioner: ProvisionerName})
	s, env, _ := newTestStorage(t, immediate, pvc)
	if err := s.syncClaim(env.ctx, "default/imm"); err != nil {
		t.Fatal(err)
	}
	pv, err := env.client.CoreV1().PersistentVolumes().Get(env.ctx, "pvc-"+string(pvc.UID), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v := pv.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions[0].Values[0]; v != "sim-node-0" {
		t.Errorf("node = %s", v)
	}
	if pv.Spec.PersistentVolumeReclaimPolicy != v1.PersistentVolumeReclaimRetain {
		t.Errorf("reclaim policy = %s", pv.Spec.PersistentVolumeReclaimPolicy)
	}
}

func TestProvisioningFault(t *testing.T) {
	pvc := testPVC("f", ClassFixed, map[string]string{annStorageProvisioner: ProvisionerName, annSelectedNode: "sim-node-0"})
	s, env, dir := newTestStorage(t, pvc)
	env.faults.set(map[string]string{KeyFailProvisioning: ClassFixed})
	if err := s.syncClaim(env.ctx, "default/f"); err != nil {
		t.Fatal(err)
	}
	if _, err := env.client.CoreV1().PersistentVolumes().Get(env.ctx, "pvc-"+string(pvc.UID), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("PV provisioned despite fault (err=%v)", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("volume dir created despite fault")
	}
	events := drainEvents(env.recorder)
	if !slices.ContainsFunc(events, func(e string) bool { return strings.HasPrefix(e, "Warning ProvisioningFailed") }) {
		t.Errorf("events = %v", events)
	}
	// "*" matches every class; removing the fault lets provisioning proceed.
	env.faults.set(map[string]string{KeyFailProvisioning: "*"})
	_ = s.syncClaim(env.ctx, "default/f")
	env.faults.set(nil)
	if err := s.syncClaim(env.ctx, "default/f"); err != nil {
		t.Fatal(err)
	}
	if _, err := env.client.CoreV1().PersistentVolumes().Get(env.ctx, "pvc-"+string(pvc.UID), metav1.GetOptions{}); err != nil {
		t.Fatalf("PV not provisioned after fault removal: %v", err)
	}
}

func releasedPV(name, path string) *v1.PersistentVolume {
	return &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: k8stypes.UID("pv-uid-" + slug(name)), Annotations: map[string]string{annProvisionedBy: ProvisionerName}},
		Spec: v1.PersistentVolumeSpec{
			PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimDelete,
			ClaimRef:                      &v1.ObjectReference{Namespace: "default", Name: "gone", UID: "old-uid"},
			PersistentVolumeSource:        v1.PersistentVolumeSource{HostPath: &v1.HostPathVolumeSource{Path: path}},
		},
		Status: v1.PersistentVolumeStatus{Phase: v1.VolumeReleased},
	}
}

func TestReclaimReleasedVolume(t *testing.T) {
	dir := t.TempDir()
	pvDir := filepath.Join(dir, "pvc-1")
	if err := os.MkdirAll(filepath.Join(pvDir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pvDir, "sub", "data"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	released := releasedPV("pvc-1", pvDir)
	retained := releasedPV("pvc-2", filepath.Join(dir, "pvc-2"))
	retained.Spec.PersistentVolumeReclaimPolicy = v1.PersistentVolumeReclaimRetain
	foreign := releasedPV("pvc-3", filepath.Join(dir, "pvc-3"))
	foreign.Annotations[annProvisionedBy] = "example.com/other"
	outside := releasedPV("pvc-4", "/etc")
	bound := releasedPV("pvc-5", filepath.Join(dir, "pvc-5"))
	bound.Status.Phase = v1.VolumeBound

	for _, d := range []string{"pvc-2", "pvc-3", "pvc-5"} {
		_ = os.MkdirAll(filepath.Join(dir, d), 0o755)
	}
	env := newTestEnv(t, released, retained, foreign, outside, bound)
	s := NewStorage(env.client, env.factory, dir, testNodes, env.faults, env.recorder, env.log)
	env.start(t)
	for _, name := range []string{"pvc-1", "pvc-2", "pvc-3", "pvc-4", "pvc-5"} {
		if err := s.syncVolume(env.ctx, name); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	if _, err := os.Stat(pvDir); !os.IsNotExist(err) {
		t.Errorf("released volume dir still exists (err=%v)", err)
	}
	if _, err := env.client.CoreV1().PersistentVolumes().Get(env.ctx, "pvc-1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("released PV not deleted (err=%v)", err)
	}
	for _, name := range []string{"pvc-2", "pvc-3", "pvc-4", "pvc-5"} {
		if _, err := env.client.CoreV1().PersistentVolumes().Get(env.ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("%s deleted: %v", name, err)
		}
	}
	for _, d := range []string{"pvc-2", "pvc-3", "pvc-5"} {
		if _, err := os.Stat(filepath.Join(dir, d)); err != nil {
			t.Errorf("%s dir removed: %v", d, err)
		}
	}
	if _, err := os.Stat("/etc/passwd"); err != nil {
		t.Fatal("sanity")
	}
}

func TestReclaimDeferredWhileNodeLost(t *testing.T) {
	dir := t.TempDir()
	pvDir := filepath.Join(dir, "pvc-1")
	if err := os.MkdirAll(pvDir, 0o755); err != nil {
		t.Fatal(err)
	}
	pv := releasedPV("pvc-1", pvDir)
	pv.Spec.NodeAffinity = BuildPV(testPVC("c", ClassFixed, nil), StorageClasses()[0], "sim-node-1", pvDir).Spec.NodeAffinity
	env := newTestEnv(t, pv)
	s := NewStorage(env.client, env.factory, dir, testNodes, env.faults, env.recorder, env.log)
	env.start(t)
	env.faults.set(map[string]string{KeyLostNodes: "sim-node-1"})
	if err := s.syncVolume(env.ctx, "pvc-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(pvDir); err != nil {
		t.Errorf("volume dir of a lost node removed: %v", err)
	}
	if _, err := env.client.CoreV1().PersistentVolumes().Get(env.ctx, "pvc-1", metav1.GetOptions{}); err != nil {
		t.Errorf("PV of a lost node deleted: %v", err)
	}
	// The node comes back: the change re-queues the volume, which is reclaimed.
	s.FaultsChanged(env.faults.Current(), FaultSet{})
	if s.volumes.Len() != 1 {
		t.Errorf("volumes queued = %d, want 1", s.volumes.Len())
	}
	env.faults.set(nil)
	if err := s.syncVolume(env.ctx, "pvc-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(pvDir); !os.IsNotExist(err) {
		t.Errorf("volume dir still exists (err=%v)", err)
	}
	if _, err := env.client.CoreV1().PersistentVolumes().Get(env.ctx, "pvc-1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("PV not deleted (err=%v)", err)
	}
}

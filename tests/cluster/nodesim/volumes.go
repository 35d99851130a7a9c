package main

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/utils/ptr"
)

// WaitError means a pod cannot start yet (e.g. its PVC is not bound); the
// kubelet keeps the pod Pending and retries.
type WaitError struct{ Msg string }

func (e *WaitError) Error() string { return e.Msg }

func waitf(format string, args ...any) error { return &WaitError{fmt.Sprintf(format, args...)} }

// PodVolume is a pod volume materialised on the host.
type PodVolume struct {
	Path     string
	ReadOnly bool
	// Writable reports whether nodesim may create subPath directories in it.
	Writable bool
}

// VolumeResolver turns pod volumes into host directories.
type VolumeResolver struct {
	Client    kubernetes.Interface
	PVCLister corelisters.PersistentVolumeClaimLister
	PVLister  corelisters.PersistentVolumeLister
	Get       ObjectGetter
	Log       *slog.Logger
}

// Prepare resolves every volume of pod; podDir is the pod's directory
// (emptyDirs and API-object volumes are created under podDir/volumes).
func (r *VolumeResolver) Prepare(ctx context.Context, pod *v1.Pod, podDir string, net PodNetwork) (map[string]PodVolume, error) {
	vols := map[string]PodVolume{}
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		dir := filepath.Join(podDir, "volumes", vol.Name)
		var (
			pv  PodVolume
			err error
		)
		switch {
		case vol.PersistentVolumeClaim != nil:
			pv, err = r.claimVolume(pod.Namespace, vol.PersistentVolumeClaim.ClaimName, vol.PersistentVolumeClaim.ReadOnly)
		case vol.Ephemeral != nil:
			pv, err = r.claimVolume(pod.Namespace, pod.Name+"-"+vol.Name, false)
		case vol.EmptyDir != nil:
			pv, err = PodVolume{Path: dir, Writable: true}, os.MkdirAll(dir, 0o777)
		case vol.HostPath != nil:
			pv, err = hostPathVolume(vol.HostPath)
		case vol.ConfigMap != nil:
			pv, err = r.configMapVolume(ctx, pod, vol.ConfigMap, dir)
		case vol.Secret != nil:
			pv, err = r.secretVolume(ctx, pod, vol.Secret, dir)
		case vol.DownwardAPI != nil:
			pv, err = PodVolume{Path: dir, ReadOnly: true}, writeFiles(dir, func(files map[string]fileData) error {
				return downwardFiles(pod, vol.DownwardAPI.Items, vol.DownwardAPI.DefaultMode, net, files)
			})
		case vol.Projected != nil:
			pv, err = PodVolume{Path: dir, ReadOnly: true}, writeFiles(dir, func(files map[string]fileData) error {
				r.projectedFiles(ctx, pod, vol.Projected, net, files)
				return nil
			})
		default:
			r.Log.Warn("unsupported volume type, using an empty directory", "pod", klogKey(pod), "volume", vol.Name)
			pv, err = PodVolume{Path: dir, Writable: true}, os.MkdirAll(dir, 0o777)
		}
		if err != nil {
			return nil, fmt.Errorf("volume %q: %w", vol.Name, err)
		}
		vols[vol.Name] = pv
	}
	return vols, nil
}

func (r *VolumeResolver) claimVolume(ns, claimName string, readOnly bool) (PodVolume, error) {
	pvc, err := r.PVCLister.PersistentVolumeClaims(ns).Get(claimName)
	if apierrors.IsNotFound(err) {
		return PodVolume{}, waitf("persistentvolumeclaim %q not found", claimName)
	}
	if err != nil {
		return PodVolume{}, err
	}
	if pvc.DeletionTimestamp != nil {
		return PodVolume{}, waitf("persistentvolumeclaim %q is being deleted", claimName)
	}
	if pvc.Spec.VolumeName == "" || pvc.Status.Phase != v1.ClaimBound {
		return PodVolume{}, waitf("persistentvolumeclaim %q is not bound", claimName)
	}
	pv, err := r.PVLister.Get(pvc.Spec.VolumeName)
	if apierrors.IsNotFound(err) {
		return PodVolume{}, waitf("persistentvolume %q not found", pvc.Spec.VolumeName)
	}
	if err != nil {
		return PodVolume{}, err
	}
	if pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID != pvc.UID {
		return PodVolume{}, waitf("persistentvolume %q is not bound to claim %q yet", pv.Name, claimName)
	}
	var path string
	switch {
	case pv.Spec.HostPath != nil:
		path = pv.Spec.HostPath.Path
	case pv.Spec.Local != nil:
		path = pv.Spec.Local.Path
	default:
		return PodVolume{}, waitf("persistentvolume %q is neither hostPath nor local; nodesim cannot mount it", pv.Name)
	}
	if err := os.MkdirAll(path, 0o777); err != nil {
		return PodVolume{}, err
	}
	return PodVolume{Path: path, ReadOnly: readOnly, Writable: !readOnly}, nil
}

func hostPathVolume(hp *v1.HostPathVolumeSource) (PodVolume, error) {
	t := ptr.Deref(hp.Type, v1.HostPathUnset)
	switch t {
	case v1.HostPathDirectoryOrCreate:
		if err := os.MkdirAll(hp.Path, 0o755); err != nil {
			return PodVolume{}, err
		}
	case v1.HostPathFileOrCreate:
		if err := os.MkdirAll(filepath.Dir(hp.Path), 0o755); err != nil {
			return PodVolume{}, err
		}
		f, err := os.OpenFile(hp.Path, os.O_CREATE|os.O_RDONLY, 0o644)
		if err != nil {
			return PodVolume{}, err
		}
		f.Close()
	default:
		if _, err := os.Stat(hp.Path); err != nil && t != v1.HostPathUnset {
			return PodVolume{}, waitf("hostPath %s: %v", hp.Path, err)
		}
	}
	return PodVolume{Path: hp.Path, Writable: true}, nil
}

type fileData struct {
	data []byte
	mode os.FileMode
}

// writeFiles replaces dir's content with the files produced by fill.
func writeFiles(dir string, fill func(map[string]fileData) error) error {
	files := map[string]fileData{}
	if err := fill(files); err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, rel := range slices.Sorted(maps.Keys(files)) {
		clean := filepath.Clean(rel)
		if filepath.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") {
			return fmt.Errorf("invalid file path %q", rel)
		}
		p := filepath.Join(dir, clean)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		f := files[rel]
		if err := os.WriteFile(p, f.data, f.mode); err != nil {
			return err
		}
		if err := os.Chmod(p, f.mode); err != nil {
			return err
		}
	}
	return nil
}

func fileMode(item, def *int32) os.FileMode {
	switch {
	case item != nil:
		return os.FileMode(*item)
	case def != nil:
		return os.FileMode(*def)
	}
	return 0o644
}

// keyFiles maps data keys to files, honouring items (KeyToPath).
func keyFiles(data map[string][]byte, items []v1.KeyToPath, defMode *int32, optional bool, what string, files map[string]fileData) error {
	if len(items) == 0 {
		for k, v := range data {
			files[k] = fileData{v, fileMode(nil, defMode)}
		}
		return nil
	}
	for _, it := range items {
		v, ok := data[it.Key]
		if !ok {
			if optional {
				continue
			}
			return fmt.Errorf("%s: key %q not found", what, it.Key)
		}
		files[it.Path] = fileData{v, fileMode(it.Mode, defMode)}
	}
	return nil
}

func configMapData(cm *v1.ConfigMap) map[string][]byte {
	data := map[string][]byte{}
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	maps.Copy(data, cm.BinaryData)
	return data
}

func (r *VolumeResolver) configMapVolume(ctx context.Context, pod *v1.Pod, src *v1.ConfigMapVolumeSource, dir string) (PodVolume, error) {
	pv := PodVolume{Path: dir, ReadOnly: true}
	return pv, writeFiles(dir, func(files map[string]fileData) error {
		cm, err := r.Get.ConfigMap(ctx, pod.Namespace, src.Name)
		if apierrors.IsNotFound(err) {
			if optional(src.Optional) {
				return nil
			}
			return waitf("configmap %q not found", src.Name)
		}
		if err != nil {
			return err
		}
		return keyFiles(configMapData(cm), src.Items, src.DefaultMode, optional(src.Optional), "configmap "+src.Name, files)
	})
}

func (r *VolumeResolver) secretVolume(ctx context.Context, pod *v1.Pod, src *v1.SecretVolumeSource, dir string) (PodVolume, error) {
	pv := PodVolume{Path: dir, ReadOnly: true}
	return pv, writeFiles(dir, func(files map[string]fileData) error {
		s, err := r.Get.Secret(ctx, pod.Namespace, src.SecretName)
		if apierrors.IsNotFound(err) {
			if optional(src.Optional) {
				return nil
			}
			return waitf("secret %q not found", src.SecretName)
		}
		if err != nil {
			return err
		}
		return keyFiles(s.Data, src.Items, src.DefaultMode, optional(src.Optional), "secret "+src.SecretName, files)
	})
}

func downwardFiles(pod *v1.Pod, items []v1.DownwardAPIVolumeFile, defMode *int32, net PodNetwork, files map[string]fileData) error {
	for _, it := range items {
		var (
			v   string
			err error
		)
		switch {
		case it.FieldRef != nil:
			v, err = PodFieldValue(pod, it.FieldRef.FieldPath, net)
		case it.ResourceFieldRef != nil:
			v, err = ResourceFieldValue(findContainer(pod, it.ResourceFieldRef.ContainerName), it.ResourceFieldRef)
		}
		if err != nil {
			return fmt.Errorf("downwardAPI %s: %w", it.Path, err)
		}
		files[it.Path] = fileData{[]byte(v), fileMode(it.Mode, defMode)}
	}
	return nil
}

func findContainer(pod *v1.Pod, name string) *v1.Container {
	for _, cs := range [][]v1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range cs {
			if cs[i].Name == name || name == "" {
				return &cs[i]
			}
		}
	}
	return nil
}

// projectedFiles is best effort: a source that cannot be resolved is logged
// and skipped (in particular the service-account token never blocks a pod).
func (r *VolumeResolver) projectedFiles(ctx context.Context, pod *v1.Pod, src *v1.ProjectedVolumeSource, net PodNetwork, files map[string]fileData) {
	warn := func(err error) {
		r.Log.Warn("projected volume source skipped", "pod", klogKey(pod), "err", err)
	}
	for _, s := range src.Sources {
		switch {
		case s.ConfigMap != nil:
			cm, err := r.Get.ConfigMap(ctx, pod.Namespace, s.ConfigMap.Name)
			if err != nil {
				if !apierrors.IsNotFound(err) || !optional(s.ConfigMap.Optional) {
					warn(err)
				}
				continue
			}
			if err := keyFiles(configMapData(cm), s.ConfigMap.Items, src.DefaultMode, optional(s.ConfigMap.Optional), "configmap "+cm.Name, files); err != nil {
				warn(err)
			}
		case s.Secret != nil:
			sec, err := r.Get.Secret(ctx, pod.Namespace, s.Secret.Name)
			if err != nil {
				if !apierrors.IsNotFound(err) || !optional(s.Secret.Optional) {
					warn(err)
				}
				continue
			}
			if err := keyFiles(sec.Data, s.Secret.Items, src.DefaultMode, optional(s.Secret.Optional), "secret "+sec.Name, files); err != nil {
				warn(err)
			}
		case s.DownwardAPI != nil:
			if err := downwardFiles(pod, s.DownwardAPI.Items, src.DefaultMode, net, files); err != nil {
				warn(err)
			}
		case s.ServiceAccountToken != nil:
			files[s.ServiceAccountToken.Path] = fileData{[]byte(r.serviceAccountToken(ctx, pod, s.ServiceAccountToken)), fileMode(nil, src.DefaultMode)}
		}
	}
}

// PlaceholderToken is written when a TokenRequest fails.
const PlaceholderToken = "nodesim-placeholder-token"

func (r *VolumeResolver) serviceAccountToken(ctx context.Context, pod *v1.Pod, p *v1.ServiceAccountTokenProjection) string {
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: p.ExpirationSeconds,
		BoundObjectRef: &authenticationv1.BoundObjectReference{
			Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID,
		},
	}}
	if p.Audience != "" {
		req.Spec.Audiences = []string{p.Audience}
	}
	tr, err := r.Client.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, sa, req, metav1.CreateOptions{})
	if err != nil {
		r.Log.Warn("TokenRequest failed, writing a placeholder token", "pod", klogKey(pod), "serviceAccount", sa, "err", err)
		return PlaceholderToken
	}
	return tr.Status.Token
}

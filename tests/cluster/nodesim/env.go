package main

import (
	"context"
	"fmt"
	"maps"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
)

// defaultPath is the PATH of containers that do not set one.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// ExpandVars expands $(VAR) references the way the kubelet does: a defined
// variable is replaced by its value, an undefined one is left verbatim, and
// "$$" is an escaped "$".
func ExpandVars(s string, lookup func(string) (string, bool)) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch next := s[i+1]; next {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString("$(")
				i++
				continue
			}
			name := s[i+2 : i+2+end]
			if v, ok := lookup(name); ok {
				b.WriteString(v)
			} else {
				b.WriteString("$(" + name + ")")
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

// ObjectGetter fetches the ConfigMaps and Secrets a pod refers to.
type ObjectGetter interface {
	ConfigMap(ctx context.Context, ns, name string) (*v1.ConfigMap, error)
	Secret(ctx context.Context, ns, name string) (*v1.Secret, error)
}

// clientGetter reads objects straight from the API server (like the
// kubelet's "Get" ConfigMap/Secret change-detection strategy).
type clientGetter struct{ client kubernetes.Interface }

func (g clientGetter) ConfigMap(ctx context.Context, ns, name string) (*v1.ConfigMap, error) {
	return g.client.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
}

func (g clientGetter) Secret(ctx context.Context, ns, name string) (*v1.Secret, error) {
	return g.client.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
}

// PodNetwork is the addressing information exposed to containers.
type PodNetwork struct {
	PodIP, HostIP string
}

// BaseEnv is the environment every container starts with (lowest priority).
func BaseEnv(pod *v1.Pod, apiServer string) []EnvVar {
	hostname := pod.Name
	if pod.Spec.Hostname != "" {
		hostname = pod.Spec.Hostname
	}
	env := []EnvVar{
		{"PATH", defaultPath},
		{"HOSTNAME", hostname},
		{"HOME", "/root"},
	}
	if u, err := url.Parse(apiServer); err == nil && u.Hostname() != "" {
		port := u.Port()
		if port == "" {
			port = "443"
			if u.Scheme == "http" {
				port = "80"
			}
		}
		env = append(env,
			EnvVar{"KUBERNETES_SERVICE_HOST", u.Hostname()},
			EnvVar{"KUBERNETES_SERVICE_PORT", port},
		)
	}
	return env
}

// ResolveEnv computes the environment of container c: base, then envFrom,
// then env (with $(VAR) expansion against what is defined before it).
func ResolveEnv(ctx context.Context, pod *v1.Pod, c *v1.Container, net PodNetwork, base []EnvVar, get ObjectGetter) ([]EnvVar, error) {
	env := slices.Clone(base)
	vars := map[string]string{}
	for _, e := range base {
		vars[e.Name] = e.Value
	}
	set := func(name, value string) {
		env = append(env, EnvVar{name, value})
		vars[name] = value
	}
	for _, from := range c.EnvFrom {
		var data map[string]string
		switch {
		case from.ConfigMapRef != nil:
			cm, err := get.ConfigMap(ctx, pod.Namespace, from.ConfigMapRef.Name)
			if apierrors.IsNotFound(err) && optional(from.ConfigMapRef.Optional) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("envFrom configMap %q: %w", from.ConfigMapRef.Name, err)
			}
			data = cm.Data
		case from.SecretRef != nil:
			s, err := get.Secret(ctx, pod.Namespace, from.SecretRef.Name)
			if apierrors.IsNotFound(err) && optional(from.SecretRef.Optional) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("envFrom secret %q: %w", from.SecretRef.Name, err)
			}
			data = map[string]string{}
			for k, v := range s.Data {
				data[k] = string(v)
			}
			for k, v := range s.StringData {
				data[k] = v
			}
		default:
			continue
		}
		for _, k := range slices.Sorted(maps.Keys(data)) {
			name := from.Prefix + k
			if len(validation.IsEnvVarName(name)) > 0 {
				continue // the kubelet skips invalid names too
			}
			set(name, data[k])
		}
	}
	lookup := func(name string) (string, bool) { v, ok := vars[name]; return v, ok }
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			set(e.Name, ExpandVars(e.Value, lookup))
			continue
		}
		v, skip, err := valueFrom(ctx, pod, c, net, e.ValueFrom, get)
		if err != nil {
			return nil, fmt.Errorf("env %s: %w", e.Name, err)
		}
		if !skip {
			set(e.Name, v)
		}
	}
	return env, nil
}

func optional(b *bool) bool { return b != nil && *b }

func valueFrom(ctx context.Context, pod *v1.Pod, c *v1.Container, net PodNetwork, src *v1.EnvVarSource, get ObjectGetter) (value string, skip bool, err error) {
	switch {
	case src.FieldRef != nil:
		v, err := PodFieldValue(pod, src.FieldRef.FieldPath, net)
		return v, false, err
	case src.ResourceFieldRef != nil:
		v, err := ResourceFieldValue(c, src.ResourceFieldRef)
		return v, false, err
	case src.ConfigMapKeyRef != nil:
		ref := src.ConfigMapKeyRef
		cm, err := get.ConfigMap(ctx, pod.Namespace, ref.Name)
		if err != nil {
			if apierrors.IsNotFound(err) && optional(ref.Optional) {
				return "", true, nil
			}
			return "", false, fmt.Errorf("configMap %q: %w", ref.Name, err)
		}
		v, ok := cm.Data[ref.Key]
		if !ok {
			if b, found := cm.BinaryData[ref.Key]; found {
				return string(b), false, nil
			}
			if optional(ref.Optional) {
				return "", true, nil
			}
			return "", false, fmt.Errorf("key %q not found in configMap %q", ref.Key, ref.Name)
		}
		return v, false, nil
	case src.SecretKeyRef != nil:
		ref := src.SecretKeyRef
		s, err := get.Secret(ctx, pod.Namespace, ref.Name)
		if err != nil {
			if apierrors.IsNotFound(err) && optional(ref.Optional) {
				return "", true, nil
			}
			return "", false, fmt.Errorf("secret %q: %w", ref.Name, err)
		}
		if b, ok := s.Data[ref.Key]; ok {
			return string(b), false, nil
		}
		if v, ok := s.StringData[ref.Key]; ok {
			return v, false, nil
		}
		if optional(ref.Optional) {
			return "", true, nil
		}
		return "", false, fmt.Errorf("key %q not found in secret %q", ref.Key, ref.Name)
	}
	return "", true, nil
}

// PodFieldValue resolves a downward-API field path.
func PodFieldValue(pod *v1.Pod, fieldPath string, net PodNetwork) (string, error) {
	if k, ok := subscript(fieldPath, "metadata.labels"); ok {
		return pod.Labels[k], nil
	}
	if k, ok := subscript(fieldPath, "metadata.annotations"); ok {
		return pod.Annotations[k], nil
	}
	switch fieldPath {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "metadata.labels":
		return formatMap(pod.Labels), nil
	case "metadata.annotations":
		return formatMap(pod.Annotations), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.podIP", "status.podIPs":
		return net.PodIP, nil
	case "status.hostIP", "status.hostIPs":
		return net.HostIP, nil
	}
	return "", fmt.Errorf("unsupported fieldPath %q", fieldPath)
}

func subscript(fieldPath, prefix string) (string, bool) {
	if !strings.HasPrefix(fieldPath, prefix+"['") || !strings.HasSuffix(fieldPath, "']") {
		return "", false
	}
	return fieldPath[len(prefix)+2 : len(fieldPath)-2], true
}

// formatMap renders labels/annotations like the downward API does.
func formatMap(m map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(m)) {
		fmt.Fprintf(&b, "%s=%s\n", k, strconv.Quote(m[k]))
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// ResourceFieldValue resolves requests.*/limits.* of a container; unset
// limits default to the node's allocatable, as in the kubelet.
func ResourceFieldValue(c *v1.Container, ref *v1.ResourceFieldSelector) (string, error) {
	if c == nil {
		return "", fmt.Errorf("resourceFieldRef %q without a container", ref.Resource)
	}
	kind, name, ok := strings.Cut(ref.Resource, ".")
	if !ok {
		return "", fmt.Errorf("unsupported resource %q", ref.Resource)
	}
	rn := v1.ResourceName(name)
	var q resource.Quantity
	switch kind {
	case "limits":
		q, ok = c.Resources.Limits[rn]
		if !ok {
			q, ok = nodeResources()[rn]
		}
	case "requests":
		q, ok = c.Resources.Requests[rn]
		if !ok {
			q, ok = resource.MustParse("0"), true
		}
	}
	if !ok {
		return "", fmt.Errorf("unsupported resource %q", ref.Resource)
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	if rn == v1.ResourceCPU {
		return strconv.FormatInt(int64(math.Ceil(float64(q.MilliValue())/float64(divisor.MilliValue()))), 10), nil
	}
	return strconv.FormatInt(int64(math.Ceil(float64(q.Value())/float64(divisor.Value()))), 10), nil
}

// ContainerArgv is command+args with $(VAR) expansion against env.
func ContainerArgv(c *v1.Container, env []EnvVar) []string {
	vars := map[string]string{}
	for _, e := range env {
		vars[e.Name] = e.Value
	}
	lookup := func(name string) (string, bool) { v, ok := vars[name]; return v, ok }
	var argv []string
	for _, a := range append(slices.Clone(c.Command), c.Args...) {
		argv = append(argv, ExpandVars(a, lookup))
	}
	return argv
}

package main

import (
	"context"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

type mapGetter struct {
	cms     map[string]*v1.ConfigMap
	secrets map[string]*v1.Secret
}

func (g mapGetter) ConfigMap(_ context.Context, _, name string) (*v1.ConfigMap, error) {
	if cm, ok := g.cms[name]; ok {
		return cm, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, name)
}

func (g mapGetter) Secret(_ context.Context, _, name string) (*v1.Secret, error) {
	if s, ok := g.secrets[name]; ok {
		return s, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, name)
}

func TestExpandVars(t *testing.T) {
	lookup := func(n string) (string, bool) {
		v, ok := map[string]string{"A": "1", "EMPTY": ""}[n]
		return v, ok
	}
	for in, want := range map[string]string{
		"plain":          "plain",
		"$(A)":           "1",
		"x$(A)y$(A)":     "x1y1",
		"$(UNDEFINED)":   "$(UNDEFINED)",
		"$$(A)":          "$(A)",
		"$$":             "$",
		"$":              "$",
		"$(A":            "$(A",
		"$HOME $(EMPTY)": "$HOME ",
		"echo $$HOME":    "echo $HOME",
	} {
		if got := ExpandVars(in, lookup); got != want {
			t.Errorf("ExpandVars(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestResolveEnvAndArgv(t *testing.T) {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "job-x", Namespace: "ns", UID: "u1", Labels: map[string]string{"app": "a"}},
		Spec:       v1.PodSpec{NodeName: "sim-node-0", ServiceAccountName: "sa"},
	}
	getter := mapGetter{
		cms: map[string]*v1.ConfigMap{"cfg": {Data: map[string]string{"MODE": "fast", "bad-key": "x", "LEVEL": "3"}}},
		secrets: map[string]*v1.Secret{
			"creds": {Data: map[string][]byte{"password": []byte("s3cret")}},
		},
	}
	c := &v1.Container{
		Command: []string{"sh", "-c"},
		Args:    []string{"echo $(POD) $(MODE) $$(POD) $(NOPE)"},
		EnvFrom: []v1.EnvFromSource{
			{Prefix: "CFG_", ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}},
			{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "missing"}, Optional: ptr.To(true)}},
		},
		Env: []v1.EnvVar{
			{Name: "POD", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
			{Name: "NS", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
			{Name: "IP", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
			{Name: "NODE", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
			{Name: "APP", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels['app']"}}},
			{Name: "MODE", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}, Key: "MODE"}}},
			{Name: "PASSWORD", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "creds"}, Key: "password"}}},
			{Name: "OPT", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "nope"}, Key: "k", Optional: ptr.To(true)}}},
			{Name: "MEM", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}}},
			{Name: "GREETING", Value: "hi $(POD) in $(NS)"},
			{Name: "NODE", Value: "override"},
		},
		Resources: v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceMemory: resource.MustParse("64Mi")}},
	}
	base := BaseEnv(pod, "https://127.0.0.1:6443")
	env, err := ResolveEnv(context.Background(), pod, c, PodNetwork{PodIP: "127.1.0.5", HostIP: NodeIP}, base, getter)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, e := range dedupeEnv(env) {
		got[e.Name] = e.Value
	}
	want := map[string]string{
		"PATH": defaultPath, "HOSTNAME": "job-x", "HOME": "/root",
		"KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": "6443",
		"CFG_MODE": "fast", "CFG_LEVEL": "3", "CFG_bad-key": "x", // relaxed env var names (GA)
		"POD": "job-x", "NS": "ns", "IP": "127.1.0.5", "NODE": "override", "APP": "a",
		"MODE": "fast", "PASSWORD": "s3cret", "MEM": "64", "GREETING": "hi job-x in ns",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	for _, absent := range []string{"OPT"} {
		if _, ok := got[absent]; ok {
			t.Errorf("%s should not be set", absent)
		}
	}
	if len(got) != len(want) {
		t.Errorf("env has %d vars, want %d: %v", len(got), len(want), got)
	}
	argv := ContainerArgv(c, env)
	if !slices.Equal(argv, []string{"sh", "-c", "echo job-x fast $(POD) $(NOPE)"}) {
		t.Errorf("argv = %q", argv)
	}

	// A missing non-optional reference is an error (the kubelet's
	// CreateContainerConfigError).
	c.Env = append(c.Env, v1.EnvVar{Name: "X", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}, Key: "absent"}}})
	if _, err := ResolveEnv(context.Background(), pod, c, PodNetwork{}, base, getter); err == nil {
		t.Error("missing key: no error")
	}
}

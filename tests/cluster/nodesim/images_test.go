package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestNormalizeImageRefAndKey(t *testing.T) {
	for in, want := range map[string]string{
		"busybox":                                        "busybox:latest",
		"busybox:1.36":                                   "busybox:1.36",
		"localhost/stsresize:0.1.0":                      "localhost/stsresize:0.1.0",
		"localhost:5000/stsresize":                       "localhost:5000/stsresize:latest",
		"localhost:5000/stsresize:0.1":                   "localhost:5000/stsresize:0.1",
		"docker.io/library/busybox":                      "docker.io/library/busybox:latest",
		"busybox@sha256:" + strings.Repeat("a", 64):      "busybox@sha256:" + strings.Repeat("a", 64),
		"busybox:1.36@sha256:" + strings.Repeat("a", 64): "busybox:1.36@sha256:" + strings.Repeat("a", 64),
	} {
		if got := NormalizeImageRef(in); got != want {
			t.Errorf("NormalizeImageRef(%q) = %q, want %q", in, got, want)
		}
		sum := sha256.Sum256([]byte(want))
		if got := ImageKey(in); got != hex.EncodeToString(sum[:]) {
			t.Errorf("ImageKey(%q) = %s", in, got)
		}
	}
	// Computed independently: printf %s REF | sha256sum.
	for ref, want := range map[string]string{
		"localhost/stsresize:0.1.0": "3410625199ed5b0a46db7b69b4aaaecaa349667b99ad3240a1001b183f810999",
		"busybox":                   "3726e854f7e14d58c1dc2b1156c3759b194984a1e8484ee0f3e637bc0212cad8",
	} {
		if got := ImageKey(ref); got != want {
			t.Errorf("ImageKey(%q) = %s, want %s", ref, got, want)
		}
	}
}

// writeImage lays out a local image the way the loader does and returns its
// directory (the rootfs is created empty).
func writeImage(t *testing.T, imagesDir, ref string, cfg ImageRuntimeConfig, digest string) string {
	t.Helper()
	dir := filepath.Join(imagesDir, ImageKey(ref))
	if err := os.MkdirAll(filepath.Join(dir, "rootfs"), 0o755); err != nil {
		t.Fatal(err)
	}
	blob, err := json.Marshal(map[string]any{"architecture": "amd64", "os": "linux", "config": cfg,
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{}}})
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{"image.json": string(blob), "ref": NormalizeImageRef(ref) + "\n"}
	if digest != "" {
		files["digest"] = digest + "\n"
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestImageStoreLookup(t *testing.T) {
	images := t.TempDir()
	store := ImageStore{Dir: images}
	if img, err := store.Lookup("localhost/app:1"); img != nil || err != nil {
		t.Fatalf("absent image: %v, %v", img, err)
	}
	if img, err := (ImageStore{Dir: filepath.Join(images, "missing")}).Lookup("app"); img != nil || err != nil {
		t.Fatalf("absent images dir: %v, %v", img, err)
	}
	digest := "sha256:" + strings.Repeat("0f", 32)
	cfg := ImageRuntimeConfig{User: "65532:65532", Env: []string{"PATH=/bin"}, Entrypoint: []string{"/app"}, Cmd: []string{"run"}, WorkingDir: "/w"}
	dir := writeImage(t, images, "localhost/app:1", cfg, digest)
	img, err := store.Lookup("localhost/app:1")
	if err != nil || img == nil {
		t.Fatalf("Lookup: %v, %v", img, err)
	}
	if img.Ref != "localhost/app:1" || img.RootFS != filepath.Join(dir, "rootfs") || img.Digest != digest ||
		img.OS != "linux" || img.Architecture != "amd64" || img.Config.User != cfg.User || !slices.Equal(img.Config.Cmd, cfg.Cmd) ||
		img.Config.WorkingDir != "/w" {
		t.Errorf("image = %+v", img)
	}

	// Untagged references are found under their ":latest" key.
	writeImage(t, images, "localhost/tool", ImageRuntimeConfig{}, "")
	if img, err := store.Lookup("localhost/tool:latest"); err != nil || img == nil || img.Digest != "" {
		t.Errorf("tool: %+v, %v", img, err)
	}

	// scripts/cluster load-image publishes <key> as a link to the load's
	// directory; a lookup pins the load it resolved.
	linked := writeImage(t, images, "linked:1", cfg, "")
	load := filepath.Join(images, ".load.abc")
	if err := os.Rename(linked, load); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(".load.abc", linked); err != nil {
		t.Fatal(err)
	}
	if img, err := store.Lookup("linked:1"); err != nil || img == nil || img.RootFS != filepath.Join(load, "rootfs") {
		t.Errorf("linked: %+v, %v", img, err)
	}

	// A loaded image is seen by the next lookup: nothing is cached.
	if img, _ := store.Lookup("late"); img != nil {
		t.Fatal("late image present too early")
	}
	writeImage(t, images, "late", ImageRuntimeConfig{}, "")
	if img, _ := store.Lookup("late"); img == nil {
		t.Error("image loaded after the first lookup not seen")
	}

	broken := map[string]func(dir string){
		"bad json":     func(dir string) { _ = os.WriteFile(filepath.Join(dir, "image.json"), []byte("{"), 0o644) },
		"no rootfs":    func(dir string) { _ = os.RemoveAll(filepath.Join(dir, "rootfs")) },
		"other ref":    func(dir string) { _ = os.WriteFile(filepath.Join(dir, "ref"), []byte("other:1\n"), 0o644) },
		"bad digest":   func(dir string) { _ = os.WriteFile(filepath.Join(dir, "digest"), []byte("md5:x"), 0o644) },
		"no imagejson": func(dir string) { _ = os.Remove(filepath.Join(dir, "image.json")) },
	}
	for name, breakIt := range broken {
		ref := "broken/" + strings.ReplaceAll(name, " ", "-") + ":1"
		breakIt(writeImage(t, images, ref, cfg, digest))
		if img, err := store.Lookup(ref); err == nil || img != nil {
			t.Errorf("%s: %+v, %v", name, img, err)
		}
	}
}

func TestImageArgv(t *testing.T) {
	img := ImageRuntimeConfig{Entrypoint: []string{"/entry", "$(A)"}, Cmd: []string{"cmd", "$(A)"}}
	env := []EnvVar{{"A", "expanded"}}
	for name, tc := range map[string]struct {
		c    v1.Container
		img  ImageRuntimeConfig
		want []string
	}{
		"command and args":   {v1.Container{Command: []string{"/bin/x", "$(A)"}, Args: []string{"y"}}, img, []string{"/bin/x", "expanded", "y"}},
		"command only":       {v1.Container{Command: []string{"/bin/x"}}, img, []string{"/bin/x"}},
		"args only":          {v1.Container{Args: []string{"a", "$(A)"}}, img, []string{"/entry", "$(A)", "a", "expanded"}},
		"neither":            {v1.Container{}, img, []string{"/entry", "$(A)", "cmd", "$(A)"}},
		"cmd only image":     {v1.Container{}, ImageRuntimeConfig{Cmd: []string{"/bin/sh"}}, []string{"/bin/sh"}},
		"args, no entry":     {v1.Container{Args: []string{"/bin/true"}}, ImageRuntimeConfig{Cmd: []string{"/bin/sh"}}, []string{"/bin/true"}},
		"empty image":        {v1.Container{}, ImageRuntimeConfig{}, nil},
		"entrypoint, no cmd": {v1.Container{}, ImageRuntimeConfig{Entrypoint: []string{"/e"}}, []string{"/e"}},
	} {
		if got := ImageArgv(&tc.c, env, tc.img); !slices.Equal(got, tc.want) {
			t.Errorf("%s: argv = %q, want %q", name, got, tc.want)
		}
	}
}

func TestImageEnvPrecedence(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "default"}}
	base := BaseEnv(pod, "https://127.0.0.1:6443")
	imageEnv := []string{"PATH=/image/bin", "HOSTNAME=image-host", "LANG=C.UTF-8", "FROM_IMAGE=1", "EMPTY="}
	resolve := func(c *v1.Container, imageEnv []string) map[string]string {
		t.Helper()
		env, err := ResolveEnv(t.Context(), pod, c, PodNetwork{}, ImageBaseEnv(imageEnv, base), nil)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		for _, e := range dedupeEnv(env) {
			m[e.Name] = e.Value
		}
		return m
	}
	got := resolve(&v1.Container{Env: []v1.EnvVar{{Name: "LANG", Value: "en"}, {Name: "REF", Value: "$(FROM_IMAGE)"}}}, imageEnv)
	for k, want := range map[string]string{
		"PATH":                    "/image/bin", // the image's PATH replaces the default
		"HOSTNAME":                "web-0",      // nodesim's own variables win over the image
		"KUBERNETES_SERVICE_HOST": "127.0.0.1",
		"LANG":                    "en", // the container wins over the image
		"FROM_IMAGE":              "1",
		"EMPTY":                   "",
		"REF":                     "1",
	} {
		if v, ok := got[k]; !ok || v != want {
			t.Errorf("%s = %q (set %v), want %q", k, v, ok, want)
		}
	}
	if got := resolve(&v1.Container{Env: []v1.EnvVar{{Name: "PATH", Value: "/mine"}}}, imageEnv); got["PATH"] != "/mine" {
		t.Errorf("container PATH lost: %q", got["PATH"])
	}
	if got := resolve(&v1.Container{}, []string{"X=1"}); got["PATH"] != defaultPath {
		t.Errorf("image without PATH: PATH = %q", got["PATH"])
	}
	// The image's variables come first, so the container's override them
	// in the dedupe that BuildArgv does.
	env := ImageBaseEnv([]string{"A=1", "PATH=/p"}, []EnvVar{{"PATH", defaultPath}, {"HOME", "/root"}})
	if want := []EnvVar{{"A", "1"}, {"PATH", "/p"}, {"HOME", "/root"}}; !slices.Equal(env, want) {
		t.Errorf("ImageBaseEnv = %v", env)
	}
}

func TestImageWorkingDir(t *testing.T) {
	img := ImageRuntimeConfig{WorkingDir: "/srv"}
	if got := ImageWorkingDir(&v1.Container{WorkingDir: "/data"}, img); got != "/data" {
		t.Errorf("container workingDir: %q", got)
	}
	if got := ImageWorkingDir(&v1.Container{}, img); got != "/srv" {
		t.Errorf("image workingDir: %q", got)
	}
	if got := ImageWorkingDir(&v1.Container{}, ImageRuntimeConfig{}); got != "/" {
		t.Errorf("default workingDir: %q", got)
	}
}

func TestResolveUser(t *testing.T) {
	root := t.TempDir()
	_ = os.MkdirAll(filepath.Join(root, "usr", "etc"), 0o755)
	_ = os.WriteFile(filepath.Join(root, "usr", "etc", "passwd"), []byte(
		"root:x:0:0:root:/root:/bin/sh\n# comment\nbroken line\nnonroot:x:65532:65533::/home/nonroot:/sbin/nologin\napp:x:1000:1001::/app:/bin/sh\n"), 0o644)
	_ = os.WriteFile(filepath.Join(root, "usr", "etc", "group"), []byte("root:x:0:\nstaff:x:50:app\nnonroot:x:65533:\n"), 0o644)
	// /etc is an absolute symlink in the image: it must be read inside it.
	if err := os.Symlink("/usr/etc", filepath.Join(root, "etc")); err != nil {
		t.Fatal(err)
	}
	pod := func(sc *v1.PodSecurityContext) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: v1.PodSpec{SecurityContext: sc}}
	}
	for name, tc := range map[string]struct {
		pod       *v1.Pod
		sc        *v1.SecurityContext
		imageUser string
		want      UserID
	}{
		"image default root":     {pod(nil), nil, "", UserID{0, 0}},
		"image uid:gid":          {pod(nil), nil, "65532:65532", UserID{65532, 65532}},
		"image uid from passwd":  {pod(nil), nil, "1000", UserID{1000, 1001}},
		"image uid not in file":  {pod(nil), nil, "4242", UserID{4242, 0}},
		"image name":             {pod(nil), nil, "nonroot", UserID{65532, 65533}},
		"image name:group":       {pod(nil), nil, "app:staff", UserID{1000, 50}},
		"image uid:group":        {pod(nil), nil, "7:staff", UserID{7, 50}},
		"image name:gid":         {pod(nil), nil, "app:9", UserID{1000, 9}},
		"pod runAsUser":          {pod(&v1.PodSecurityContext{RunAsUser: ptr.To[int64](1000)}), nil, "nonroot", UserID{1000, 1001}},
		"pod runAsUser+Group":    {pod(&v1.PodSecurityContext{RunAsUser: ptr.To[int64](5), RunAsGroup: ptr.To[int64](6)}), nil, "nonroot", UserID{5, 6}},
		"pod runAsGroup only":    {pod(&v1.PodSecurityContext{RunAsGroup: ptr.To[int64](6)}), nil, "nonroot", UserID{65532, 6}},
		"container wins":         {pod(&v1.PodSecurityContext{RunAsUser: ptr.To[int64](5), RunAsGroup: ptr.To[int64](6)}), &v1.SecurityContext{RunAsUser: ptr.To[int64](0)}, "nonroot", UserID{0, 6}},
		"container group":        {pod(nil), &v1.SecurityContext{RunAsGroup: ptr.To[int64](0)}, "65532:65532", UserID{65532, 0}},
		"runAsNonRoot satisfied": {pod(&v1.PodSecurityContext{RunAsNonRoot: ptr.To(true)}), nil, "65532", UserID{65532, 65533}},
	} {
		got, err := ResolveUser(tc.pod, &v1.Container{Name: "c", SecurityContext: tc.sc}, tc.imageUser, RootFS{Root: root})
		if err != nil || got != tc.want {
			t.Errorf("%s: %+v, %v; want %+v", name, got, err, tc.want)
		}
	}
	for name, tc := range map[string]struct {
		pod       *v1.Pod
		sc        *v1.SecurityContext
		imageUser string
		reason    string
	}{
		"unknown user":              {pod(nil), nil, "nobody", "CreateContainerError"},
		"unknown group":             {pod(nil), nil, "app:wheel", "CreateContainerError"},
		"nonRoot, image root":       {pod(&v1.PodSecurityContext{RunAsNonRoot: ptr.To(true)}), nil, "", "CreateContainerConfigError"},
		"nonRoot, runAsUser 0":      {pod(nil), &v1.SecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](0)}, "app", "CreateContainerConfigError"},
		"nonRoot, non-numeric user": {pod(&v1.PodSecurityContext{RunAsNonRoot: ptr.To(true)}), nil, "app", "CreateContainerConfigError"},
	} {
		_, err := ResolveUser(tc.pod, &v1.Container{Name: "c", SecurityContext: tc.sc}, tc.imageUser, RootFS{Root: root})
		ce, ok := errors.AsType[*CreateError](err)
		if !ok || ce.Reason != tc.reason {
			t.Errorf("%s: error %v, want reason %s", name, err, tc.reason)
		}
	}
	if _, err := ResolveUser(pod(nil), &v1.Container{}, "ghost", RootFS{Root: root}); err == nil || !strings.Contains(err.Error(), `no user "ghost"`) {
		t.Errorf("unclear error for an unknown user: %v", err)
	}
}

func TestApplyImage(t *testing.T) {
	images := t.TempDir()
	writeImage(t, images, "localhost/app:1", ImageRuntimeConfig{
		User: "65532:65532", Env: []string{"PATH=/app/bin"}, Entrypoint: []string{"/app/bin/app"}, Cmd: []string{"run"}, WorkingDir: "/app",
	}, "")
	img, err := ImageStore{Dir: images}.Lookup("localhost/app:1")
	if err != nil {
		t.Fatal(err)
	}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}
	c := &v1.Container{Name: "c", Args: []string{"--port=$(PORT)"}}
	spec := ContainerSpec{
		Env:    []EnvVar{{"PORT", "80"}},
		Mounts: []Mount{{Source: "/vol", Target: "/etc/resolv.conf/"}},
	}
	if err := applyImage(&spec, pod, c, img); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(spec.Argv, []string{"/app/bin/app", "--port=80"}) || spec.WorkingDir != "/app" ||
		spec.RootFS != img.RootFS || spec.User == nil || *spec.User != (UserID{65532, 65532}) {
		t.Errorf("spec = %+v", spec)
	}
	for _, m := range spec.Mounts[1:] {
		if m.Target != "/etc/hosts" || !m.ReadOnly {
			t.Errorf("unexpected extra mount %+v (the container mounts its own resolv.conf)", m)
		}
	}
}

func TestKubeletRunsLocalImage(t *testing.T) {
	e := newTestKubelet(t)
	images := filepath.Join(e.workdir, "images")
	digest := "sha256:" + strings.Repeat("ab", 32)
	dir := writeImage(t, images, "localhost/busybox-image", ImageRuntimeConfig{
		User: "app", Env: []string{"PATH=/bin", "FROM_IMAGE=yes"},
		Entrypoint: []string{"/bin/sh", "-c"}, Cmd: []string{"echo from the image Cmd"}, WorkingDir: "/srv/app",
	}, digest)
	buildBusyboxRootFS(t, filepath.Join(dir, "rootfs"))
	writeImage(t, images, "localhost/empty:1", ImageRuntimeConfig{}, "")
	writeImage(t, images, "localhost/ghost:1", ImageRuntimeConfig{User: "ghost", Cmd: []string{"/bin/true"}}, "")

	job := simPod("img-job", v1.RestartPolicyNever)
	job.Spec.Containers[0].Image = "localhost/busybox-image"
	job.Spec.Containers[0].Args = []string{`echo "$(id -u):$(id -g) $(pwd) $FROM_IMAGE"`}
	job.Spec.SecurityContext = &v1.PodSecurityContext{RunAsUser: ptr.To[int64](4000)}
	empty := simPod("img-empty", v1.RestartPolicyNever)
	empty.Spec.Containers[0].Image = "localhost/empty:1"
	ghost := simPod("img-ghost", v1.RestartPolicyAlways)
	ghost.Spec.Containers[0].Image = "localhost/ghost:1"
	for _, p := range []*v1.Pod{job, empty, ghost} {
		if _, err := e.client.CoreV1().Pods("default").Create(e.ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	got := e.waitPhase(t, "img-job", v1.PodSucceeded)
	if log := e.podLog("img-job", "main"); log != "4000:0 /srv/app yes\n" {
		t.Errorf("log = %q", log)
	}
	if id := got.Status.ContainerStatuses[0].ImageID; id != digest {
		t.Errorf("imageID = %q", id)
	}
	got = e.waitPhase(t, "img-empty", v1.PodFailed)
	if term := got.Status.ContainerStatuses[0].State.Terminated; term == nil || term.Reason != "ContainerCannotRun" ||
		term.Message != fmt.Sprintf(NoImageCommandMessage, "localhost/empty:1") {
		t.Errorf("terminated = %+v", term)
	}
	eventually(t, 10*time.Second, "ghost user reported", func() bool {
		w := e.pod(t, "img-ghost").Status.ContainerStatuses[0].State.Waiting
		return w != nil && w.Reason == "CreateContainerError" && strings.Contains(w.Message, `no user "ghost"`)
	})
	events := strings.Join(drainEvents(e.recorder), "\n")
	if want := `Normal Pulled Container image "localhost/busybox-image" already present on machine`; !strings.Contains(events, want) {
		t.Errorf("events lack %q:\n%s", want, events)
	}
}

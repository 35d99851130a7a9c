package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// mkTree creates files (content "x"), directories (trailing "/") and
// symlinks ("link -> target") under root.
func mkTree(t *testing.T, root string, entries ...string) {
	t.Helper()
	for _, e := range entries {
		var err error
		p := filepath.Join(root, strings.TrimSuffix(strings.Fields(e)[0], "/"))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		switch {
		case strings.Contains(e, " -> "):
			err = os.Symlink(strings.SplitN(e, " -> ", 2)[1], p)
		case strings.HasSuffix(e, "/"):
			err = os.MkdirAll(p, 0o755)
		default:
			err = os.WriteFile(p, []byte("x"), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// escapeRoot builds an image tree inside parent/root next to parent/secret,
// a host file that no image path may reach.
func escapeRoot(t *testing.T) string {
	t.Helper()
	parent := t.TempDir()
	root := filepath.Join(parent, "root")
	mkTree(t, parent, "secret/", "secret/data")
	mkTree(t, root,
		"usr/bin/sh", "usr/lib/", "etc/passwd", "run/lock/", "var/lib/", "srv/", "proc/", "dev/", "tmp/",
		"bin -> usr/bin",
		"sbin -> /usr/bin",
		"var/run -> /run",
		"escape -> ../secret",
		"deep-escape -> ../../../../../../secret",
		"abs-escape -> /../../secret",
		"etc/shadow-link -> ../../../etc/passwd",
		"dangling -> /nowhere",
		"loop1 -> loop2", "loop2 -> /loop1",
	)
	return root
}

func TestRootFSResolvesInsideTheImage(t *testing.T) {
	root := escapeRoot(t)
	fs := RootFS{Root: root}
	for in, want := range map[string]string{
		"/":                   "/",
		"/bin/sh":             "/usr/bin/sh",
		"/sbin":               "/usr/bin",
		"/sbin/sh":            "/usr/bin/sh",
		"/var/run/secrets/sa": "/run/secrets/sa",
		"/escape":             "/secret",
		"/escape/data":        "/secret/data",
		"/deep-escape/data":   "/secret/data",
		"/abs-escape":         "/secret",
		"/etc/shadow-link":    "/etc/passwd",
		"/usr/../../etc":      "/etc",
		"/dangling/x":         "/nowhere/x",
		"/loop1":              "/loop1", // unresolvable: left as is
	} {
		if got := fs.Resolve(in); got != want {
			t.Errorf("Resolve(%q) = %q, want %q", in, got, want)
		}
	}
	for p, want := range map[string]bool{
		"/": true, "/bin": true, "/bin/sh": true, "/sbin/sh": true, "/bin/none": false,
		"/escape": true, "/escape/data": false, "/abs-escape/data": false, "/dangling": true,
		"/loop1": true, "/loop1/x": false, "/var/run": true, "/var/run/lock": true,
	} {
		if got := fs.Exists(p); got != want {
			t.Errorf("Exists(%q) = %v", p, got)
		}
	}
	ents, err := fs.ReadDir("/sbin")
	if err != nil || len(ents) != 1 || ents[0].Name != "sh" {
		t.Errorf("ReadDir(/sbin) = %+v, %v", ents, err)
	}
	ents, _ = fs.ReadDir("/")
	if i := slices.IndexFunc(ents, func(e HostEntry) bool { return e.Name == "sbin" }); i < 0 || ents[i].Symlink != "/usr/bin" {
		t.Errorf("ReadDir(/) = %+v", ents)
	}
	if _, err := fs.ReadDir("/escape"); err == nil {
		t.Error("ReadDir through an escaping link listed the host")
	}
	for in, want := range map[string]string{
		"/usr":          filepath.Join(root, "usr"),
		"/sbin/sh":      filepath.Join(root, "usr/bin/sh"),
		"/escape/data":  filepath.Join(root, "secret/data"),
		"/abs-escape":   filepath.Join(root, "secret"),
		"/var/run/lock": filepath.Join(root, "run/lock"),
	} {
		if got, err := fs.BindSource(in); err != nil || got != want {
			t.Errorf("BindSource(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if got, err := fs.BindSource("/loop1"); err == nil {
		t.Errorf("BindSource of a symlink loop = %q", got)
	}
	if b, err := fs.ReadFile("/etc/shadow-link"); err != nil || string(b) != "x" {
		t.Errorf("ReadFile = %q, %v", b, err)
	}
}

func TestBuildArgvRootFS(t *testing.T) {
	root := escapeRoot(t)
	spec := ContainerSpec{
		Argv: []string{"/bin/sh"},
		Mounts: []Mount{
			{Source: "/host/sa", Target: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true},
			{Source: "/host/tool", Target: "/sbin/tool"},
			{Source: "/host/data", Target: "/escape/data"},
			{Source: "/host/cfg", Target: "/var/lib/app/config", ReadOnly: true},
		},
		WorkingDir:               "/srv/app",
		TerminationMessageSource: "/host/term",
		RootFS:                   root,
		User:                     &UserID{UID: 65532, GID: 65532},
	}
	args, err := BuildArgv(spec, RootFS{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	mustHave := func(seq ...string) int {
		t.Helper()
		i := indexOfSeq(args, seq...)
		if i < 0 {
			t.Errorf("argv lacks %q:\n%s", seq, strings.Join(args, " "))
		}
		return i
	}
	in := func(p string) string { return filepath.Join(root, p) }
	mustHave("--unshare-user", "--uid", "65532", "--gid", "65532")
	rootIdx := mustHave("--tmpfs", "/")
	mustHave("--ro-bind", in("usr"), "/usr")
	mustHave("--ro-bind", in("etc"), "/etc")
	mustHave("--symlink", "usr/bin", "/bin")
	mustHave("--symlink", "/usr/bin", "/sbin")
	mustHave("--symlink", "../secret", "/escape")
	// The service-account token goes through the image's /var/run -> /run.
	run := mustHave("--tmpfs", "/run")
	mustHave("--ro-bind", in("run/lock"), "/run/lock")
	mustHave("--ro-bind", "/host/sa", "/run/secrets/kubernetes.io/serviceaccount")
	// /sbin/tool is /usr/bin/tool in the image: /usr/bin is shadowed.
	mustHave("--tmpfs", "/usr/bin")
	mustHave("--ro-bind", in("usr/bin/sh"), "/usr/bin/sh")
	mustHave("--bind", "/host/tool", "/usr/bin/tool")
	// The escaping link leads to the image's /secret, not the host's.
	mustHave("--bind", "/host/data", "/secret/data")
	mustHave("--tmpfs", "/var/lib")
	mustHave("--ro-bind", "/host/cfg", "/var/lib/app/config")
	mustHave("--bind", "/host/term", "/dev/termination-log")
	mustHave("--dir", "/srv/app")
	mustHave("--chdir", "/srv/app")
	ro := mustHave("--remount-ro", "/")
	if !(rootIdx < run && run < ro) {
		t.Errorf("bad ordering:\n%s", strings.Join(args, " "))
	}
	volumes := map[string]bool{"/host/sa": true, "/host/tool": true, "/host/data": true, "/host/cfg": true}
	for i, a := range args {
		if a != "--ro-bind" || volumes[args[i+1]] {
			continue
		}
		if src, dst := args[i+1], args[i+2]; src != in(dst) {
			t.Errorf("image path %s bound from %s, not from inside the rootfs", dst, src)
		}
		if dst := args[i+2]; slices.Contains(sandboxFresh, dst) {
			t.Errorf("%s bound from the image; it must be fresh", dst)
		}
	}
	for _, u := range []*UserID{nil, {}} {
		spec.User = u
		args, err := BuildArgv(spec, RootFS{Root: root})
		if err != nil || indexOfSeq(args, "--unshare-user") >= 0 {
			t.Errorf("user %v: %v %v", u, err, args)
		}
	}
	spec.User = &UserID{UID: 0, GID: 5}
	if args, _ := BuildArgv(spec, RootFS{Root: root}); indexOfSeq(args, "--unshare-user", "--uid", "0", "--gid", "5") < 0 {
		t.Errorf("non-root group not mapped: %v", args)
	}
	if _, err := BuildArgv(ContainerSpec{Argv: []string{"x"}, WorkingDir: "/loop1/x"}, RootFS{Root: root}); err == nil {
		t.Error("workingDir below a symlink loop: no error")
	}
}

// buildBusyboxRootFS fills root with a minimal image: the host's busybox and
// the shared libraries ldd lists for it (at their host paths), applet links
// in /usr/bin, /bin -> usr/bin, /sbin -> /usr/bin (absolute), /var/run ->
// /run, a passwd with user app (1234:2345), a marker file and /srv/app.
func buildBusyboxRootFS(t *testing.T, root string) {
	t.Helper()
	bb, err := exec.LookPath("busybox")
	if err != nil {
		t.Skip("busybox is not installed (scripts/bootstrap installs it)")
	}
	files := map[string]string{"/usr/bin/busybox": bb}
	if out, err := exec.Command("ldd", bb).Output(); err == nil {
		for _, line := range strings.Split(string(out), "\n") {
			f := strings.Fields(line)
			switch {
			case len(f) >= 3 && f[1] == "=>" && strings.HasPrefix(f[2], "/"):
				files[f[2]] = f[2]
			case len(f) >= 1 && strings.HasPrefix(f[0], "/"):
				files[f[0]] = f[0]
			}
		}
	} else if _, lerr := exec.LookPath("ldd"); lerr != nil {
		t.Skip("ldd is not installed")
	} // else: a static busybox
	for dst, src := range files {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(root, dst)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var links []string
	for _, applet := range []string{"sh", "id", "cat", "ls", "pwd", "touch", "test"} {
		links = append(links, "usr/bin/"+applet+" -> busybox")
	}
	mkTree(t, root, append(links, "bin -> usr/bin", "sbin -> /usr/bin", "var/run -> /run", "run/", "srv/app/", "etc/image-marker")...)
	for name, content := range map[string]string{
		"etc/passwd": "root:x:0:0:root:/root:/bin/sh\napp:x:1234:2345:app:/srv/app:/bin/sh\n",
		"etc/group":  "root:x:0:\napp:x:2345:\n",
	} {
		if err := os.WriteFile(filepath.Join(root, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

const imageScript = `echo "uid=$(id -u) gid=$(id -g) sbin-uid=$(/sbin/id -u)"
echo "path=$PATH from_image=$FROM_IMAGE greeting=$GREETING pwd=$(pwd)"
test -e /etc/os-release && echo "HOST FILE VISIBLE"
test -e /etc/image-marker && echo "marker present"
echo "token=$(cat /var/run/secrets/kubernetes.io/serviceaccount/token)"
echo written > /data/out && echo "volume writable"
touch /etc/x 2>/dev/null && echo "ROOT WRITABLE"
echo bye > /dev/termination-log`

func TestRunnerRunsImageContainer(t *testing.T) {
	r := requireSandbox(t)
	if _, err := os.Lstat("/etc/os-release"); err != nil {
		t.Skip("the host has no /etc/os-release to hide")
	}
	dir := t.TempDir()
	images := filepath.Join(dir, "images")
	ref := "localhost/busybox-image:1"
	imgDir := writeImage(t, images, ref, ImageRuntimeConfig{
		User: "app:app", Env: []string{"PATH=/bin", "FROM_IMAGE=yes"},
		Entrypoint: []string{"/bin/sh", "-c"}, Cmd: []string{imageScript}, WorkingDir: "/srv/app",
	}, "")
	buildBusyboxRootFS(t, filepath.Join(imgDir, "rootfs"))
	img, err := ImageStore{Dir: images}.Lookup(ref)
	if err != nil || img == nil {
		t.Fatalf("Lookup: %v, %v", img, err)
	}

	vol, sa := filepath.Join(dir, "vol"), filepath.Join(dir, "sa")
	for _, d := range []string{vol, sa} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	_ = os.WriteFile(filepath.Join(sa, "token"), []byte("tok"), 0o600)
	term := filepath.Join(dir, "termination-log")
	_ = os.WriteFile(term, nil, 0o644)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "img-0", Namespace: "default"}}
	c := &v1.Container{Name: "main", Image: ref, Env: []v1.EnvVar{{Name: "GREETING", Value: "hi"}}}
	env, err := ResolveEnv(t.Context(), pod, c, PodNetwork{}, ImageBaseEnv(img.Config.Env, BaseEnv(pod, "https://127.0.0.1:6443")), nil)
	if err != nil {
		t.Fatal(err)
	}
	spec := ContainerSpec{
		Env: env,
		Mounts: []Mount{
			{Source: vol, Target: "/data"},
			{Source: sa, Target: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true},
		},
		Hostname:                 "img-0",
		TerminationMessageSource: term,
	}
	if err := applyImage(&spec, pod, c, img); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "c.log")
	p, err := r.Start(spec, logPath)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Done():
	case <-time.After(20 * time.Second):
		p.Stop(0)
		t.Fatal("container did not finish")
	}
	logData, _ := os.ReadFile(logPath)
	log := string(logData)
	if p.ExitCode() != 0 {
		t.Errorf("exit code %d; log:\n%s", p.ExitCode(), log)
	}
	for _, want := range []string{
		"uid=1234 gid=2345 sbin-uid=1234\n",
		"path=/bin from_image=yes greeting=hi pwd=/srv/app\n",
		"marker present\n", "token=tok\n", "volume writable\n",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
	for _, bad := range []string{"HOST FILE VISIBLE", "ROOT WRITABLE"} {
		if strings.Contains(log, bad) {
			t.Errorf("%s:\n%s", bad, log)
		}
	}
	// The container's uid is nodesim's outside the sandbox.
	if st, err := os.Stat(filepath.Join(vol, "out")); err != nil || st.Sys().(*syscall.Stat_t).Uid != uint32(os.Getuid()) {
		t.Errorf("volume file: %v", err)
	}
	if got := TerminationMessage(term, false, 0, logPath, 0); got != "bye\n" {
		t.Errorf("termination message = %q", got)
	}
}

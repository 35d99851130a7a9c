package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// fakeFS is a HostFS over a fixed set of paths.
type fakeFS struct {
	paths    map[string]bool   // existing paths
	symlinks map[string]string // path -> target
}

func (f fakeFS) Exists(p string) bool {
	_, link := f.symlinks[p]
	return p == "/" || f.paths[p] || link
}

func (f fakeFS) Resolve(p string) string {
	for link, target := range f.symlinks {
		if p == link || strings.HasPrefix(p, link+"/") {
			if !filepath.IsAbs(target) {
				target = filepath.Join(filepath.Dir(link), target)
			}
			return filepath.Join(target, strings.TrimPrefix(p, link))
		}
	}
	return p
}

func (f fakeFS) ReadDir(dir string) ([]HostEntry, error) {
	var out []HostEntry
	add := func(p, target string) {
		if filepath.Dir(p) == dir && p != "/" {
			out = append(out, HostEntry{Name: filepath.Base(p), Symlink: target})
		}
	}
	for p := range f.paths {
		add(p, "")
	}
	for p, t := range f.symlinks {
		add(p, t)
	}
	return out, nil
}

var testFS = fakeFS{
	paths: map[string]bool{
		"/usr": true, "/etc": true, "/proc": true, "/dev": true, "/tmp": true, "/var": true,
		"/var/lib": true, "/var/lib/dpkg": true, "/var/log": true,
	},
	symlinks: map[string]string{"/bin": "usr/bin"},
}

// argAfter returns the index of the sequence seq in args, or -1.
func indexOfSeq(args []string, seq ...string) int {
	for i := 0; i+len(seq) <= len(args); i++ {
		if slices.Equal(args[i:i+len(seq)], seq) {
			return i
		}
	}
	return -1
}

func TestBuildArgv(t *testing.T) {
	spec := ContainerSpec{
		Argv: []string{"sh", "-c", "echo hi"},
		Env:  []EnvVar{{"PATH", "/bin"}, {"A", "1"}, {"B", "2"}, {"A", "3"}},
		Mounts: []Mount{
			{Source: "/host/vol-b", Target: "/data/nested", ReadOnly: true},
			{Source: "/host/vol-a", Target: "/data/"},
			{Source: "/host/cfg", Target: "/var/lib/app/config", ReadOnly: true},
			{Source: "/host/logs", Target: "/var/log"},
		},
		WorkingDir:               "/data",
		Hostname:                 "web-0",
		TerminationMessageSource: "/host/pod/c.termination-log",
	}
	args, err := BuildArgv(spec, testFS)
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
	mustHave("--die-with-parent")
	mustHave("--unshare-pid")
	mustHave("--unshare-uts", "--hostname", "web-0")
	root := mustHave("--tmpfs", "/")
	usr := mustHave("--ro-bind", "/usr", "/usr")
	mustHave("--ro-bind", "/etc", "/etc")
	mustHave("--symlink", "usr/bin", "/bin")
	for _, fresh := range []string{"/proc", "/dev", "/tmp"} {
		if indexOfSeq(args, "--ro-bind", fresh, fresh) >= 0 {
			t.Errorf("%s must not be bound from the host", fresh)
		}
	}
	dev := mustHave("--dev", "/dev")
	mustHave("--proc", "/proc")
	mustHave("--tmpfs", "/tmp")
	// /var/lib/app does not exist on the host: /var/lib gets shadowed so
	// that the mount point can be created, keeping its real children.
	shadow := mustHave("--tmpfs", "/var/lib")
	mustHave("--ro-bind", "/var/lib/dpkg", "/var/lib/dpkg")
	// /data does not exist but its parent is the (tmpfs) root: no shadow.
	if indexOfSeq(args, "--tmpfs", "/data") >= 0 {
		t.Error("root-level mount point must not need a shadow")
	}
	volA := mustHave("--bind", "/host/vol-a", "/data")
	volB := mustHave("--ro-bind", "/host/vol-b", "/data/nested")
	cfg := mustHave("--ro-bind", "/host/cfg", "/var/lib/app/config")
	mustHave("--bind", "/host/logs", "/var/log")
	term := mustHave("--bind", "/host/pod/c.termination-log", "/dev/termination-log")
	mustHave("--dir", "/data")
	ro := mustHave("--remount-ro", "/")
	mustHave("--remount-ro", "/var/lib")
	mustHave("--chdir", "/data")
	mustHave("--clearenv")
	mustHave("--setenv", "A", "3")
	mustHave("--setenv", "B", "2")
	if indexOfSeq(args, "--setenv", "A", "1") >= 0 {
		t.Error("duplicate env var not collapsed")
	}
	sep := mustHave("--", "sh", "-c", "echo hi")
	if sep != len(args)-4 {
		t.Errorf("command must come last: %v", args[sep:])
	}
	order := []int{root, usr, dev, shadow, volA, volB, cfg, term, ro, sep}
	if !slices.IsSorted(order) {
		t.Errorf("bad ordering %v:\n%s", order, strings.Join(args, " "))
	}
}

func TestBuildArgvDefaultsAndErrors(t *testing.T) {
	args, err := BuildArgv(ContainerSpec{Argv: []string{"true"}, TerminationMessageSource: "/t", TerminationMessagePath: "/msgs/term"}, testFS)
	if err != nil {
		t.Fatal(err)
	}
	if indexOfSeq(args, "--chdir", "/") < 0 || indexOfSeq(args, "--bind", "/t", "/msgs/term") < 0 || indexOfSeq(args, "--dir") >= 0 {
		t.Errorf("argv: %v", args)
	}
	if indexOfSeq(args, "--unshare-uts") >= 0 {
		t.Error("no hostname: UTS namespace not needed")
	}
	for name, spec := range map[string]ContainerSpec{
		"no command":       {},
		"relative mount":   {Argv: []string{"x"}, Mounts: []Mount{{Source: "/a", Target: "data"}}},
		"mount at root":    {Argv: []string{"x"}, Mounts: []Mount{{Source: "/a", Target: "/"}}},
		"relative workdir": {Argv: []string{"x"}, WorkingDir: "work"},
	} {
		if _, err := BuildArgv(spec, testFS); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestBuildArgvSymlinkedParent(t *testing.T) {
	// /bin -> usr/bin; /bin/tool does not exist: /usr/bin must be shadowed.
	fs := testFS
	fs.paths = map[string]bool{"/usr": true, "/usr/bin": true, "/usr/bin/sh": true}
	args, err := BuildArgv(ContainerSpec{Argv: []string{"x"}, Mounts: []Mount{{Source: "/v", Target: "/bin/tool"}}}, fs)
	if err != nil {
		t.Fatal(err)
	}
	if indexOfSeq(args, "--tmpfs", "/usr/bin") < 0 || indexOfSeq(args, "--ro-bind", "/usr/bin/sh", "/usr/bin/sh") < 0 ||
		indexOfSeq(args, "--bind", "/v", "/usr/bin/tool") < 0 {
		t.Errorf("argv: %v", args)
	}
}

func TestBuildArgvAbsoluteSymlink(t *testing.T) {
	// /var/run -> /run (absolute): service-account tokens are mounted at
	// /var/run/secrets/...; bwrap cannot mkdir through an absolute symlink,
	// so the target is rewritten, nested mounts included.
	fs := fakeFS{
		paths:    map[string]bool{"/var": true, "/run": true, "/run/lock": true},
		symlinks: map[string]string{"/var/run": "/run"},
	}
	args, err := BuildArgv(ContainerSpec{Argv: []string{"x"}, WorkingDir: "/var/run/app", Mounts: []Mount{
		{Source: "/sa", Target: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true},
		{Source: "/nested", Target: "/var/run/secrets/kubernetes.io/serviceaccount/extra"},
	}}, fs)
	if err != nil {
		t.Fatal(err)
	}
	for _, seq := range [][]string{
		{"--tmpfs", "/run"},
		{"--ro-bind", "/run/lock", "/run/lock"},
		{"--ro-bind", "/sa", "/run/secrets/kubernetes.io/serviceaccount"},
		{"--bind", "/nested", "/run/secrets/kubernetes.io/serviceaccount/extra"},
		{"--dir", "/run/app"},
		{"--chdir", "/run/app"},
	} {
		if indexOfSeq(args, seq...) < 0 {
			t.Errorf("argv lacks %q: %v", seq, args)
		}
	}
}

func TestContainerMounts(t *testing.T) {
	dir := t.TempDir()
	vols := map[string]PodVolume{
		"data": {Path: filepath.Join(dir, "data"), Writable: true},
		"cfg":  {Path: filepath.Join(dir, "cfg"), ReadOnly: true},
	}
	_ = os.MkdirAll(filepath.Join(dir, "cfg"), 0o755)
	_ = os.WriteFile(filepath.Join(dir, "cfg", "app.conf"), []byte("x"), 0o644)
	c := &v1.Container{VolumeMounts: []v1.VolumeMount{
		{Name: "data", MountPath: "/data"},
		{Name: "data", MountPath: "/per-pod", SubPathExpr: "pods/$(POD_NAME)", ReadOnly: true},
		{Name: "cfg", MountPath: "/etc/app.conf", SubPath: "app.conf"},
	}}
	lookup := func(n string) (string, bool) { return map[string]string{"POD_NAME": "web-0"}[n], n == "POD_NAME" }
	mounts, err := ContainerMounts(c, vols, lookup)
	if err != nil {
		t.Fatal(err)
	}
	want := []Mount{
		{Source: filepath.Join(dir, "data"), Target: "/data"},
		{Source: filepath.Join(dir, "data", "pods", "web-0"), Target: "/per-pod", ReadOnly: true},
		{Source: filepath.Join(dir, "cfg", "app.conf"), Target: "/etc/app.conf", ReadOnly: true},
	}
	if !slices.Equal(mounts, want) {
		t.Errorf("mounts = %+v", mounts)
	}
	if st, err := os.Stat(filepath.Join(dir, "data", "pods", "web-0")); err != nil || !st.IsDir() {
		t.Errorf("subPath dir not created: %v", err)
	}
	for name, vm := range map[string]v1.VolumeMount{
		"unknown volume":           {Name: "nope", MountPath: "/x"},
		"escaping subPath":         {Name: "data", MountPath: "/x", SubPath: "../etc"},
		"missing read-only subdir": {Name: "cfg", MountPath: "/x", SubPath: "missing"},
	} {
		if _, err := ContainerMounts(&v1.Container{VolumeMounts: []v1.VolumeMount{vm}}, vols, lookup); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestTerminationMessage(t *testing.T) {
	dir := t.TempDir()
	msg := filepath.Join(dir, "msg")
	logPath := filepath.Join(dir, "log")
	_ = os.WriteFile(logPath, []byte("previous run output\n"), 0o644)
	offset := int64(len("previous run output\n"))
	f, _ := os.OpenFile(logPath, os.O_APPEND|os.O_WRONLY, 0)
	for i := range 100 {
		_, _ = f.WriteString("line " + string(rune('0'+i%10)) + "\n")
	}
	f.Close()

	_ = os.WriteFile(msg, []byte("explicit message"), 0o644)
	if got := TerminationMessage(msg, true, 1, logPath, offset); got != "explicit message" {
		t.Errorf("file message: %q", got)
	}
	_ = os.WriteFile(msg, []byte(strings.Repeat("x", 5000)), 0o644)
	if got := TerminationMessage(msg, false, 0, logPath, offset); len(got) != 4096 {
		t.Errorf("message not capped: %d bytes", len(got))
	}
	_ = os.WriteFile(msg, nil, 0o644)
	if got := TerminationMessage(msg, false, 1, logPath, offset); got != "" {
		t.Errorf("File policy must not fall back to logs: %q", got)
	}
	if got := TerminationMessage(msg, true, 0, logPath, offset); got != "" {
		t.Errorf("no fallback on success: %q", got)
	}
	got := TerminationMessage(msg, true, 2, logPath, offset)
	if lines := strings.Count(got, "\n"); lines != 80 || strings.Contains(got, "previous") || !strings.HasSuffix(got, "line 9\n") {
		t.Errorf("fallback tail has %d lines: %q", lines, got)
	}
	if got := TerminationMessage(msg, true, 2, logPath, offset+int64(len("line 0\n"))*100); got != "" {
		t.Errorf("nothing logged in this run: %q", got)
	}
	if got := TerminationMessage(filepath.Join(dir, "absent"), true, 2, filepath.Join(dir, "absent.log"), 0); got != "" {
		t.Errorf("missing files: %q", got)
	}
}

func requireSandbox(t *testing.T) *Runner {
	t.Helper()
	r := NewRunner(testLogger(t))
	if r.bwrap == "" {
		if _, err := exec.LookPath("bwrap"); err != nil {
			t.Skipf("bubblewrap is not installed: %v", r.err)
		}
		t.Skipf("bubblewrap cannot create a sandbox on this machine: %v", r.err)
	}
	return r
}

func TestRunnerRunsCommandInSandbox(t *testing.T) {
	r := requireSandbox(t)
	dir := t.TempDir()
	vol := filepath.Join(dir, "vol")
	ro := filepath.Join(dir, "ro")
	sa := filepath.Join(dir, "sa")
	for _, d := range []string{vol, ro, sa} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	_ = os.WriteFile(filepath.Join(sa, "token"), []byte("tok"), 0o644)
	term := filepath.Join(dir, "termination-log")
	_ = os.WriteFile(term, nil, 0o644)
	logPath := filepath.Join(dir, "c.log")
	script := `set -u
echo "hello $GREETING from $(pwd) as $(hostname)" > /data/out
echo "stdout line"; echo "stderr line" >&2
touch /etc/nodesim-should-fail 2>/dev/null && echo "ROOT WRITABLE"
touch /config/x 2>/dev/null && echo "RO VOLUME WRITABLE"
echo tmp > /tmp/scratch && echo "tmp ok"
echo "token=$(cat /var/run/secrets/kubernetes.io/serviceaccount/token)"
mkdir -p /data/deep/dir && echo "volume mkdir ok"
echo "bye" > /dev/termination-log
exit 3`
	p, err := r.Start(ContainerSpec{
		Argv: []string{"/bin/sh", "-c", script},
		Env:  []EnvVar{{"PATH", defaultPath}, {"GREETING", "world"}},
		Mounts: []Mount{
			{Source: vol, Target: "/data"},
			{Source: ro, Target: "/config", ReadOnly: true},
			// /var/run is an absolute symlink to /run on most hosts.
			{Source: sa, Target: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true},
		},
		WorkingDir:               "/data",
		Hostname:                 "web-0",
		TerminationMessageSource: term,
	}, logPath)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Done():
	case <-time.After(20 * time.Second):
		p.Stop(0)
		t.Fatal("command did not finish")
	}
	logData, _ := os.ReadFile(logPath)
	if p.ExitCode() != 3 {
		t.Errorf("exit code = %d; log:\n%s", p.ExitCode(), logData)
	}
	out, err := os.ReadFile(filepath.Join(vol, "out"))
	if err != nil || string(out) != "hello world from /data as web-0\n" {
		t.Errorf("volume file = %q, %v; log:\n%s", out, err, logData)
	}
	for _, want := range []string{"stdout line", "stderr line", "tmp ok", "token=tok", "volume mkdir ok"} {
		if !strings.Contains(string(logData), want) {
			t.Errorf("log lacks %q:\n%s", want, logData)
		}
	}
	for _, bad := range []string{"ROOT WRITABLE", "RO VOLUME WRITABLE"} {
		if strings.Contains(string(logData), bad) {
			t.Errorf("sandbox not read-only: %s", bad)
		}
	}
	if _, err := os.Stat("/etc/nodesim-should-fail"); err == nil {
		t.Error("sandbox wrote to the host root")
	}
	if got := TerminationMessage(term, false, p.ExitCode(), logPath, 0); got != "bye\n" {
		t.Errorf("termination message = %q", got)
	}
}

func TestRunnerStopKillsProcessGroup(t *testing.T) {
	r := requireSandbox(t)
	dir := t.TempDir()
	p, err := r.Start(ContainerSpec{
		Argv: []string{"/bin/sh", "-c", "sleep 300 & sleep 300; echo not killed"},
		Env:  []EnvVar{{"PATH", defaultPath}},
	}, filepath.Join(dir, "c.log"))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	start := time.Now()
	p.Stop(2 * time.Second)
	if d := time.Since(start); d > 4*time.Second {
		t.Errorf("Stop took %v", d)
	}
	if p.ExitCode() == 0 {
		t.Errorf("exit code = 0 after kill")
	}
	r.mu.Lock()
	n := len(r.procs)
	r.mu.Unlock()
	if n != 0 {
		t.Errorf("%d processes still tracked", n)
	}
	// Zombies count too: nodesim must reap what its sandboxes leave behind.
	if out, err := exec.Command("pgrep", "-a", "-g", strconv.Itoa(p.Pid())).Output(); err == nil {
		time.Sleep(1500 * time.Millisecond) // one reaper tick
		if out2, err := exec.Command("pgrep", "-a", "-g", strconv.Itoa(p.Pid())).Output(); err == nil {
			t.Errorf("processes of group %d survived:\n%s\n%s", p.Pid(), out, out2)
		}
	}
}

package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Mount is a bind mount of a host path into the sandbox.
type Mount struct {
	Source   string // host path (file or directory)
	Target   string // absolute path inside the sandbox
	ReadOnly bool
}

// EnvVar is one environment variable of a container.
type EnvVar struct{ Name, Value string }

// ContainerSpec is everything needed to run one container process.
type ContainerSpec struct {
	Argv       []string // command + args, already $(VAR)-expanded
	Env        []EnvVar // final environment, in order; later entries win
	Mounts     []Mount
	WorkingDir string // "" means "/"
	Hostname   string // "" keeps the host's
	// TerminationMessageSource is the host file bound at
	// TerminationMessagePath inside the sandbox ("" = none).
	TerminationMessageSource string
	TerminationMessagePath   string
	// RootFS is the host directory shown read-only as the sandbox's "/"
	// (an image's rootfs); "" shows the host's root.
	RootFS string
	// User, if set and not root, is the identity inside a user namespace
	// that maps it to the caller.
	User *UserID
}

// UserID is the numeric identity a container process runs as.
type UserID struct{ UID, GID uint32 }

// HostEntry is a directory entry of the host filesystem.
type HostEntry struct {
	Name    string
	Symlink string // link target if the entry is a symlink
}

// HostFS is the view of the host filesystem BuildArgv needs. It is an
// interface so the argv translation can be tested as a pure function.
type HostFS interface {
	Exists(p string) bool
	ReadDir(dir string) ([]HostEntry, error)
	// Resolve returns p with symlinks evaluated (p exists).
	Resolve(p string) string
}

// OSFS is the real host filesystem.
type OSFS struct{}

// Exists reports whether p exists (without following a final symlink).
func (OSFS) Exists(p string) bool { _, err := os.Lstat(p); return err == nil }

// Resolve evaluates symlinks in p.
func (OSFS) Resolve(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

// ReadDir lists dir.
func (OSFS) ReadDir(dir string) ([]HostEntry, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := make([]HostEntry, 0, len(ents))
	for _, e := range ents {
		he := HostEntry{Name: e.Name()}
		if e.Type()&os.ModeSymlink != 0 {
			if t, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil {
				he.Symlink = t
			}
		}
		out = append(out, he)
	}
	return out, nil
}

// Paths that get fresh, writable filesystems in the sandbox.
var sandboxFresh = []string{"/dev", "/proc", "/tmp"}

func isUnder(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}

func depth(p string) int {
	if p == "/" {
		return 0
	}
	return strings.Count(p, "/")
}

// BuildArgv translates a container into a bubblewrap command line.
//
// The sandbox shows the host filesystem read-only. bubblewrap 0.8 cannot
// create mount points inside a read-only bind (and has no overlay support),
// so instead of "--ro-bind / /" the root is a tmpfs into which every
// top-level host entry is bound read-only; a directory that needs a new mount
// point below it is "shadowed" the same way (tmpfs + read-only binds of its
// children). The tmpfs layers are remounted read-only at the end, so the
// result behaves like a read-only host root with the volumes bound on top.
// fs may also be an image's RootFS: the same construction then shows the
// image instead of the host, so both modes share the mount-point handling.
func BuildArgv(spec ContainerSpec, fs HostFS) ([]string, error) {
	if len(spec.Argv) == 0 {
		return nil, errors.New("empty command")
	}
	wd := spec.WorkingDir
	if wd == "" {
		wd = "/"
	}
	if !path.IsAbs(wd) {
		return nil, fmt.Errorf("workingDir %q is not absolute", wd)
	}
	wd = path.Clean(wd)

	mounts := slices.Clone(spec.Mounts)
	for i := range mounts {
		if !path.IsAbs(mounts[i].Target) {
			return nil, fmt.Errorf("mountPath %q is not absolute", mounts[i].Target)
		}
		mounts[i].Target = path.Clean(mounts[i].Target)
		if mounts[i].Target == "/" {
			return nil, errors.New("cannot mount a volume at /")
		}
	}
	// Resolve host symlinks in the targets: bwrap cannot create a mount
	// point through an absolute symlink (e.g. /var/run -> /run, where
	// service-account tokens are mounted).
	declared := make([]string, len(mounts))
	for i := range mounts {
		declared[i] = mounts[i].Target
	}
	for i := range mounts {
		mounts[i].Target = canonicalTarget(fs, mounts[i].Target, declared)
	}
	slices.SortStableFunc(mounts, func(a, b Mount) int {
		if d := depth(a.Target) - depth(b.Target); d != 0 {
			return d
		}
		return strings.Compare(a.Target, b.Target)
	})
	termPath := ""
	if spec.TerminationMessageSource != "" {
		termPath = spec.TerminationMessagePath
		if termPath == "" {
			termPath = "/dev/termination-log"
		}
		if !path.IsAbs(termPath) {
			return nil, fmt.Errorf("terminationMessagePath %q is not absolute", termPath)
		}
		termPath = canonicalTarget(fs, path.Clean(termPath), declared)
	}
	if wd != "/" {
		wd = canonicalTarget(fs, wd, declared)
	}

	args := []string{"--die-with-parent", "--unshare-pid", "--unshare-ipc"}
	if u := spec.User; u != nil && (u.UID != 0 || u.GID != 0) {
		// The user namespace maps the container's identity to nodesim's
		// (root), so host-root-owned volume files stay writable for it.
		args = append(args, "--unshare-user",
			"--uid", strconv.FormatUint(uint64(u.UID), 10), "--gid", strconv.FormatUint(uint64(u.GID), 10))
	}
	if spec.Hostname != "" {
		args = append(args, "--unshare-uts", "--hostname", spec.Hostname)
	}
	args = append(args, "--tmpfs", "/")
	rootArgs, err := shadowChildren(fs, "/", sandboxFresh)
	if err != nil {
		return nil, err
	}
	args = append(args, rootArgs...)
	args = append(args, "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp")

	// Which directories need shadowing so that mount points can be created?
	targets := make([]string, 0, len(mounts)+2)
	for _, m := range mounts {
		targets = append(targets, m.Target)
	}
	if termPath != "" {
		targets = append(targets, termPath)
	}
	if wd != "/" {
		targets = append(targets, wd)
	}
	var shadows []string
	for _, t := range targets {
		if s := shadowFor(fs, t, mounts); s != "" && !slices.Contains(shadows, s) {
			shadows = append(shadows, s)
		}
	}
	slices.SortFunc(shadows, func(a, b string) int {
		if d := depth(a) - depth(b); d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	for _, s := range shadows {
		children, err := shadowChildren(fs, s, nil)
		if err != nil {
			return nil, err
		}
		args = append(args, "--tmpfs", s)
		args = append(args, children...)
	}

	for _, m := range mounts {
		op := "--bind"
		if m.ReadOnly {
			op = "--ro-bind"
		}
		args = append(args, op, m.Source, m.Target)
	}
	if termPath != "" {
		args = append(args, "--bind", spec.TerminationMessageSource, termPath)
	}
	if wd != "/" {
		args = append(args, "--dir", wd)
	}
	args = append(args, "--remount-ro", "/")
	for _, s := range shadows {
		args = append(args, "--remount-ro", s)
	}
	args = append(args, "--chdir", wd, "--clearenv")
	for _, e := range dedupeEnv(spec.Env) {
		args = append(args, "--setenv", e.Name, e.Value)
	}
	args = append(args, "--")
	args = append(args, spec.Argv...)
	return args, nil
}

// shadowChildren re-creates dir's entries (except skip) in a tmpfs mounted
// at dir: symlinks as symlinks, everything else as a read-only bind.
func shadowChildren(fs HostFS, dir string, skip []string) ([]string, error) {
	ents, err := fs.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", dir, err)
	}
	slices.SortFunc(ents, func(a, b HostEntry) int { return strings.Compare(a.Name, b.Name) })
	var args []string
	for _, e := range ents {
		p := path.Join(dir, e.Name)
		if slices.Contains(skip, p) {
			continue
		}
		if e.Symlink != "" {
			args = append(args, "--symlink", e.Symlink, p)
			continue
		}
		src, err := bindSource(fs, p)
		if err != nil {
			return nil, err
		}
		args = append(args, "--ro-bind", src, p)
	}
	return args, nil
}

// canonicalTarget rewrites target so that it contains no host symlink:
// below another mount target it follows that target's canonical form,
// otherwise its longest existing host prefix is resolved.
func canonicalTarget(fs HostFS, target string, declared []string) string {
	for _, f := range sandboxFresh {
		if isUnder(target, f) {
			return target
		}
	}
	parent := ""
	for _, d := range declared {
		if d != target && isUnder(target, d) && len(d) > len(parent) {
			parent = d
		}
	}
	if parent != "" {
		return path.Join(canonicalTarget(fs, parent, declared), strings.TrimPrefix(target, parent))
	}
	anc := target
	for anc != "/" && !fs.Exists(anc) {
		anc = path.Dir(anc)
	}
	return path.Join(fs.Resolve(anc), strings.TrimPrefix(target, anc))
}

// shadowFor returns the directory that must be shadowed so that target can
// be created in the sandbox, or "" if none is needed.
func shadowFor(fs HostFS, target string, mounts []Mount) string {
	for _, f := range sandboxFresh {
		if isUnder(target, f) {
			return "" // fresh writable tmpfs in the sandbox
		}
	}
	for _, m := range mounts {
		if m.Target != target && isUnder(target, m.Target) {
			return "" // created inside another volume, like a real runtime
		}
	}
	if fs.Exists(target) {
		return ""
	}
	anc := path.Dir(target)
	for anc != "/" && !fs.Exists(anc) {
		anc = path.Dir(anc)
	}
	anc = fs.Resolve(anc)
	if anc == "/" {
		return "" // the root is a tmpfs: mkdir works
	}
	for _, f := range sandboxFresh {
		if isUnder(anc, f) {
			return ""
		}
	}
	return anc
}

// dedupeEnv keeps the last value of each name, in first-appearance order.
func dedupeEnv(env []EnvVar) []EnvVar {
	idx := map[string]int{}
	var out []EnvVar
	for _, e := range env {
		if i, ok := idx[e.Name]; ok {
			out[i].Value = e.Value
			continue
		}
		idx[e.Name] = len(out)
		out = append(out, e)
	}
	return out
}

// Runner starts sandboxed processes and keeps track of their process groups
// so that all of them can be killed on shutdown.
type Runner struct {
	log   *slog.Logger
	fs    HostFS
	bwrap string // "" if bubblewrap is unavailable
	err   error  // why bwrap is unavailable

	mu    sync.Mutex
	procs map[*Process]struct{}
}

// NewRunner locates bwrap and checks that it can create a sandbox here.
func NewRunner(log *slog.Logger) *Runner {
	r := &Runner{log: log.With("component", "runner"), fs: OSFS{}, procs: map[*Process]struct{}{}}
	startReaper(r.log)
	bw, err := exec.LookPath("bwrap")
	if err != nil {
		r.err = fmt.Errorf("bubblewrap (bwrap) not found: %w", err)
	} else {
		cmd := exec.Command(bw, "--die-with-parent", "--unshare-pid", "--ro-bind", "/", "/", "--", "/bin/true")
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := startTracked(cmd); err != nil {
			r.err = fmt.Errorf("bwrap cannot be started: %w", err)
		} else if err := waitTracked(cmd); err != nil {
			r.err = fmt.Errorf("bwrap cannot create a sandbox here: %v: %s", err, strings.TrimSpace(out.String()))
		} else {
			r.bwrap = bw
		}
	}
	if r.err != nil {
		r.log.Error("pods with commands will fail", "err", r.err)
	}
	return r
}

// Process is a running sandbox.
type Process struct {
	r        *Runner
	cmd      *exec.Cmd
	pgid     int
	started  time.Time
	done     chan struct{}
	exitCode int
	stopOnce sync.Once
}

// Start launches spec, appending stdout and stderr to logPath.
func (r *Runner) Start(spec ContainerSpec, logPath string) (*Process, error) {
	if r.bwrap == "" {
		return nil, r.err
	}
	fs := r.fs
	if spec.RootFS != "" {
		fs = RootFS{Root: spec.RootFS}
	}
	argv, err := BuildArgv(spec, fs)
	if err != nil {
		return nil, err
	}
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close() // the child has its own copy
	cmd := exec.Command(r.bwrap, argv...)
	cmd.Dir = "/"
	cmd.Env = []string{"PATH=" + defaultPath}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := startTracked(cmd); err != nil {
		return nil, err
	}
	p := &Process{r: r, cmd: cmd, pgid: cmd.Process.Pid, started: time.Now(), done: make(chan struct{})}
	r.mu.Lock()
	r.procs[p] = struct{}{}
	r.mu.Unlock()
	go func() {
		_ = waitTracked(cmd)
		p.exitCode = exitCodeOf(cmd.ProcessState)
		// The sandbox's inner process may outlive the outer one for a
		// moment (it dies through --die-with-parent): wait for the group
		// to be empty so that "exited" means "nothing left running".
		for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline) && len(groupMembers(p.pgid)) > 0; {
			time.Sleep(5 * time.Millisecond)
		}
		r.mu.Lock()
		delete(r.procs, p)
		r.mu.Unlock()
		close(p.done)
	}()
	return p, nil
}

// Process reaping. bubblewrap's outer process may exit before the inner one
// (the PID-namespace init); the orphan would be re-parented to PID 1, which
// in a container may not reap it for a long time. nodesim therefore makes
// itself a child subreaper and reaps such orphans itself. Direct children
// started through os/exec are tracked so the reaper never steals their exit
// status from exec.Cmd.Wait.
var (
	childrenMu  sync.Mutex
	children    = map[int]bool{}
	reaperStart sync.Once
)

const prSetChildSubreaper = 36 // PR_SET_CHILD_SUBREAPER

func startTracked(cmd *exec.Cmd) error {
	childrenMu.Lock()
	defer childrenMu.Unlock()
	if err := cmd.Start(); err != nil {
		return err
	}
	children[cmd.Process.Pid] = true
	return nil
}

func waitTracked(cmd *exec.Cmd) error {
	err := cmd.Wait()
	childrenMu.Lock()
	delete(children, cmd.Process.Pid)
	childrenMu.Unlock()
	return err
}

func startReaper(log *slog.Logger) {
	reaperStart.Do(func() {
		if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
			log.Warn("cannot become a child subreaper; orphaned sandbox processes are left to PID 1", "err", errno)
			return
		}
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGCHLD)
		go func() {
			tick := time.NewTicker(time.Second)
			for {
				select {
				case <-sigs:
				case <-tick.C:
				}
				reapOrphans()
			}
		}()
	})
}

// reapOrphans reaps zombie children that os/exec does not own.
func reapOrphans() {
	self := strconv.Itoa(os.Getpid())
	childrenMu.Lock()
	defer childrenMu.Unlock()
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || children[pid] {
			continue
		}
		f, ok := procStatFields(e.Name())
		if !ok {
			continue
		}
		if len(f) >= 2 && f[0] == "Z" && f[1] == self {
			var ws syscall.WaitStatus
			_, _ = syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
		}
	}
}

func exitCodeOf(ps *os.ProcessState) int {
	if ps == nil {
		return -1
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// Pid is the pid (and process group id) of the sandbox.
func (p *Process) Pid() int { return p.pgid }

// StartedAt is when the process was started.
func (p *Process) StartedAt() time.Time { return p.started }

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// ExitCode is valid after Done is closed (128+n for death by signal n).
func (p *Process) ExitCode() int { return p.exitCode }

// Stop sends SIGTERM to the container's processes, then SIGKILL after
// grace, and waits for the sandbox to exit.
//
// The two bubblewrap processes are spared from SIGTERM: the inner one is the
// init of the container's PID namespace, and if the outer one died first the
// inner one would be orphaned to PID 1 (which may never reap it). SIGKILL
// goes to the inner one, which takes the whole namespace with it; the outer
// one then exits normally and is reaped by us.
func (p *Process) Stop(grace time.Duration) {
	p.stopOnce.Do(func() {
		select {
		case <-p.done:
			return
		default:
		}
		p.signalMembers(syscall.SIGTERM, true)
		select {
		case <-p.done:
			return
		case <-time.After(grace):
		}
		p.signalMembers(syscall.SIGKILL, false)
		select {
		case <-p.done:
			return
		case <-time.After(2 * time.Second):
		}
		_ = syscall.Kill(-p.pgid, syscall.SIGKILL) // last resort
	})
	<-p.done
}

// signalMembers signals the members of the sandbox's process group except
// the outer bwrap (and, if spareInit, the inner one).
func (p *Process) signalMembers(sig syscall.Signal, spareInit bool) {
	for _, m := range groupMembers(p.pgid) {
		if m.pid == p.pgid || (spareInit && m.ppid == p.pgid) {
			continue
		}
		_ = syscall.Kill(m.pid, sig)
	}
}

type procInfo struct{ pid, ppid int }

// groupMembers lists the live processes of process group pgid via /proc.
func groupMembers(pgid int) []procInfo {
	ents, _ := os.ReadDir("/proc")
	var out []procInfo
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		f, ok := procStatFields(e.Name())
		if !ok {
			continue
		}
		if len(f) < 3 || f[0] == "Z" {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		pg, _ := strconv.Atoi(f[2])
		if pg == pgid {
			out = append(out, procInfo{pid: pid, ppid: ppid})
		}
	}
	return out
}

// KillAll stops every process still running.
func (r *Runner) KillAll(grace time.Duration) {
	r.mu.Lock()
	procs := make([]*Process, 0, len(r.procs))
	for p := range r.procs {
		procs = append(procs, p)
	}
	r.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range procs {
		wg.Go(func() { p.Stop(grace) })
	}
	wg.Wait()
	if len(procs) > 0 {
		r.log.Info("killed remaining processes", "count", len(procs))
	}
}

// Termination-message limits, as in the kubelet.
const (
	maxTerminationMessageBytes = 4096
	fallbackLogBytes           = 2048
	fallbackLogLines           = 80
)

// TerminationMessage computes a container's termination message: the
// content of its termination-message file (capped at 4096 bytes) or, with
// policy FallbackToLogsOnError, a failed container with an empty file gets
// the tail of the log it wrote in this run (from logOffset).
func TerminationMessage(msgFile string, fallbackToLogs bool, exitCode int, logPath string, logOffset int64) string {
	if msgFile != "" {
		if b, err := readCapped(msgFile, 0, maxTerminationMessageBytes); err == nil && len(b) > 0 {
			return string(b)
		}
	}
	if !fallbackToLogs || exitCode == 0 || logPath == "" {
		return ""
	}
	st, err := os.Stat(logPath)
	if err != nil || st.Size() <= logOffset {
		return ""
	}
	start := max(logOffset, st.Size()-fallbackLogBytes)
	b, err := readCapped(logPath, start, fallbackLogBytes)
	if err != nil {
		return ""
	}
	s := string(b)
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) > fallbackLogLines {
		lines = lines[len(lines)-fallbackLogLines:]
	}
	return strings.Join(lines, "")
}

func readCapped(name string, off int64, n int) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, n)
	m, err := f.ReadAt(buf, off)
	if m > 0 {
		return buf[:m], nil
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return nil, nil
}

// procStatFields returns the fields of /proc/<pid>/stat after "(comm)": state, ppid, pgrp, ...
// comm may contain spaces and parentheses, so the split starts after the last ')'.
func procStatFields(pid string) ([]string, bool) {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return nil, false
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return nil, false
	}
	return strings.Fields(string(b[i+1:])), true
}

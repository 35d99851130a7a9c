package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// Local images are what `kind load image-archive` makes present on a node.
// A loader script unpacks each one to <images dir>/<key>/ (see README.md):
//
//	rootfs/     the image filesystem
//	image.json  the OCI image config blob
//	ref         the image reference
//	digest      optional "sha256:<hex>" of image.json
//
// where <key> is ImageKey of the reference.

// NormalizeImageRef appends ":latest" to a reference that has neither a tag
// nor a digest. Nothing else is normalized (no docker.io/library/ prefix):
// the loader hashes the same string, and pods name images as loaded.
func NormalizeImageRef(ref string) string {
	if ref == "" || strings.Contains(ref, "@") {
		return ref
	}
	// A ':' before the last '/' is a registry port, not a tag.
	if strings.Contains(ref[strings.LastIndexByte(ref, '/')+1:], ":") {
		return ref
	}
	return ref + ":latest"
}

// ImageKey is the directory name of a local image: the lowercase hex
// sha256 of the normalized reference.
func ImageKey(ref string) string {
	sum := sha256.Sum256([]byte(NormalizeImageRef(ref)))
	return hex.EncodeToString(sum[:])
}

// ImageRuntimeConfig is the "config" object of an OCI image config.
type ImageRuntimeConfig struct {
	User       string   `json:"User,omitempty"`
	Env        []string `json:"Env,omitempty"`
	Entrypoint []string `json:"Entrypoint,omitempty"`
	Cmd        []string `json:"Cmd,omitempty"`
	WorkingDir string   `json:"WorkingDir,omitempty"`
}

// LocalImage is an image present on the (simulated) node.
type LocalImage struct {
	Ref          string // normalized reference
	Dir          string
	RootFS       string
	Digest       string // config digest, "" if the loader recorded none
	OS           string
	Architecture string
	Config       ImageRuntimeConfig
}

// ImageStore finds local images under Dir. It reads the disk on every
// lookup, so an image loaded while nodesim runs is used by the next
// container start.
type ImageStore struct {
	Dir string
}

var digestRE = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// Lookup returns the local image ref names, or nil if it is not present.
func (s ImageStore) Lookup(ref string) (*LocalImage, error) {
	if s.Dir == "" || ref == "" {
		return nil, nil
	}
	norm := NormalizeImageRef(ref)
	// The loader may publish <key> as a symlink that a later load of the
	// same reference replaces: resolving it once keeps one container start
	// on one load (its config with its rootfs).
	dir, err := filepath.EvalSymlinks(filepath.Join(s.Dir, ImageKey(ref)))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("local image %q: %w", norm, err)
	}
	img := &LocalImage{Ref: norm, Dir: dir, RootFS: filepath.Join(dir, "rootfs")}
	fail := func(format string, args ...any) (*LocalImage, error) {
		return nil, fmt.Errorf("local image %q (%s): %s", norm, dir, fmt.Sprintf(format, args...))
	}
	if st, err := os.Stat(img.RootFS); err != nil || !st.IsDir() {
		return fail("rootfs is not a directory")
	}
	raw, err := os.ReadFile(filepath.Join(dir, "image.json"))
	if err != nil {
		return fail("%v", err)
	}
	var cfg struct {
		OS           string             `json:"os"`
		Architecture string             `json:"architecture"`
		Config       ImageRuntimeConfig `json:"config"`
	}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return fail("image.json: %v", err)
	}
	img.OS, img.Architecture, img.Config = cfg.OS, cfg.Architecture, cfg.Config
	// The key is a hash of the reference, so a different ref means the
	// loader and nodesim disagree on normalization: better to say so.
	if b, err := os.ReadFile(filepath.Join(dir, "ref")); err == nil {
		if got := NormalizeImageRef(strings.TrimSpace(string(b))); got != norm {
			return fail("holds %q", got)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fail("%v", err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "digest")); err == nil {
		img.Digest = strings.TrimSpace(string(b))
		if !digestRE.MatchString(img.Digest) {
			return fail("malformed digest %q", img.Digest)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fail("%v", err)
	}
	return img, nil
}

// ImageBaseEnv puts the image's Env below nodesim's base environment, as a
// runtime puts it below the kubelet's. The base PATH only stands in for an
// image PATH, so the image's replaces it; a PATH in the container's env
// still wins, since ResolveEnv adds that later.
func ImageBaseEnv(imageEnv []string, base []EnvVar) []EnvVar {
	var out []EnvVar
	hasPath := false
	for _, kv := range imageEnv {
		name, value, _ := strings.Cut(kv, "=")
		if name == "" {
			continue
		}
		hasPath = hasPath || name == "PATH"
		out = append(out, EnvVar{name, value})
	}
	for _, e := range base {
		if e.Name == "PATH" && hasPath {
			continue
		}
		out = append(out, e)
	}
	return out
}

// ImageArgv merges command and args with the image's Entrypoint and Cmd
// like the kubelet and its runtime: command replaces Entrypoint and drops
// Cmd, args replace Cmd. Only the container's values get $(VAR) expansion.
func ImageArgv(c *v1.Container, env []EnvVar, img ImageRuntimeConfig) []string {
	argv := ContainerArgv(c, env)
	if len(c.Command) > 0 {
		return argv
	}
	if len(c.Args) == 0 {
		argv = img.Cmd
	}
	return append(slices.Clone(img.Entrypoint), argv...)
}

// ImageWorkingDir is the container's workingDir, else the image's, else /.
func ImageWorkingDir(c *v1.Container, img ImageRuntimeConfig) string {
	switch {
	case c.WorkingDir != "":
		return c.WorkingDir
	case img.WorkingDir != "":
		return img.WorkingDir
	}
	return "/"
}

// CreateError is a container that cannot be created for a reason the
// kubelet reports under a waiting reason of its own (the default is
// CreateContainerConfigError).
type CreateError struct {
	Reason string
	Err    error
}

func (e *CreateError) Error() string { return e.Err.Error() }
func (e *CreateError) Unwrap() error { return e.Err }

func createErrorf(reason, format string, args ...any) error {
	return &CreateError{reason, fmt.Errorf(format, args...)}
}

// ResolveUser picks the identity of container c of pod run from an image:
// runAsUser/runAsGroup of the container, else of the pod, else the image's
// User, resolved against the image's /etc/passwd and /etc/group. Like
// containerd, a uid given without a group gets its passwd primary group, or
// 0 if it has no entry. runAsNonRoot is checked as the kubelet does.
func ResolveUser(pod *v1.Pod, c *v1.Container, imageUser string, root RootFS) (UserID, error) {
	var uid, gid *int64
	var nonRoot *bool
	for _, sc := range []*v1.SecurityContext{podSecurityContext(pod), c.SecurityContext} {
		if sc == nil {
			continue
		}
		if sc.RunAsUser != nil {
			uid = sc.RunAsUser
		}
		if sc.RunAsGroup != nil {
			gid = sc.RunAsGroup
		}
		if sc.RunAsNonRoot != nil {
			nonRoot = sc.RunAsNonRoot
		}
	}
	where := fmt.Sprintf("(pod: %q, container: %s)", pod.Namespace+"/"+pod.Name, c.Name)
	mustBeNonRoot := nonRoot != nil && *nonRoot
	var u UserID
	if uid != nil {
		if mustBeNonRoot && *uid == 0 {
			return u, createErrorf("CreateContainerConfigError", "container's runAsUser breaks non-root policy %s", where)
		}
		u.UID = uint32(*uid)
		u.GID = primaryGroup(root, u.UID)
	} else {
		name, group, _ := strings.Cut(imageUser, ":")
		if _, err := strconv.ParseUint(name, 10, 32); err != nil && name != "" && mustBeNonRoot {
			return u, createErrorf("CreateContainerConfigError",
				"container has runAsNonRoot and image has non-numeric user (%s), cannot verify user is non-root %s", name, where)
		}
		var err error
		if u, err = lookupImageUser(root, name, group); err != nil {
			return u, createErrorf("CreateContainerError", "image user %q: %v", imageUser, err)
		}
		if mustBeNonRoot && u.UID == 0 {
			return u, createErrorf("CreateContainerConfigError", "container has runAsNonRoot and image will run as root %s", where)
		}
	}
	if gid != nil {
		u.GID = uint32(*gid)
	}
	return u, nil
}

func podSecurityContext(pod *v1.Pod) *v1.SecurityContext {
	psc := pod.Spec.SecurityContext
	if psc == nil {
		return nil
	}
	return &v1.SecurityContext{RunAsUser: psc.RunAsUser, RunAsGroup: psc.RunAsGroup, RunAsNonRoot: psc.RunAsNonRoot}
}

// lookupImageUser resolves an image User "user[:group]", each part a number
// or a name.
func lookupImageUser(root RootFS, user, group string) (UserID, error) {
	var u UserID
	if user == "" {
		user = "0"
	}
	if n, err := strconv.ParseUint(user, 10, 32); err == nil {
		u.UID = uint32(n)
		u.GID = primaryGroup(root, u.UID)
	} else {
		pw := readPasswd(root)
		i := slices.IndexFunc(pw, func(e passwdEntry) bool { return e.name == user })
		if i < 0 {
			return u, fmt.Errorf("no user %q in the image's /etc/passwd", user)
		}
		u.UID, u.GID = pw[i].uid, pw[i].gid
	}
	if group == "" {
		return u, nil
	}
	if n, err := strconv.ParseUint(group, 10, 32); err == nil {
		u.GID = uint32(n)
		return u, nil
	}
	for _, e := range readColonFile(root, "/etc/group") {
		if len(e) >= 3 && e[0] == group {
			if n, err := strconv.ParseUint(e[2], 10, 32); err == nil {
				u.GID = uint32(n)
				return u, nil
			}
		}
	}
	return u, fmt.Errorf("no group %q in the image's /etc/group", group)
}

type passwdEntry struct {
	name     string
	uid, gid uint32
}

// readPasswd parses the image's /etc/passwd, skipping malformed lines.
func readPasswd(root RootFS) []passwdEntry {
	var out []passwdEntry
	for _, f := range readColonFile(root, "/etc/passwd") {
		if len(f) < 4 {
			continue
		}
		uid, err1 := strconv.ParseUint(f[2], 10, 32)
		gid, err2 := strconv.ParseUint(f[3], 10, 32)
		if err1 == nil && err2 == nil {
			out = append(out, passwdEntry{f[0], uint32(uid), uint32(gid)})
		}
	}
	return out
}

// primaryGroup is uid's group in the image's /etc/passwd, or 0.
func primaryGroup(root RootFS, uid uint32) uint32 {
	for _, e := range readPasswd(root) {
		if e.uid == uid {
			return e.gid
		}
	}
	return 0
}

// readColonFile splits the lines of an image file at ':'; a missing file
// has no lines.
func readColonFile(root RootFS, p string) [][]string {
	b, err := root.ReadFile(p)
	if err != nil {
		return nil
	}
	var out [][]string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		out = append(out, strings.Split(line, ":"))
	}
	return out
}

// hostNameFiles are bound from the host into image containers: they share
// the host's network (as hostNetwork pods do), and images rarely ship
// usable copies.
var hostNameFiles = []string{"/etc/hosts", "/etc/resolv.conf"}

// applyImage turns spec, built for the host, into one that runs c from img.
// spec.Env must already include the image's Env (ImageBaseEnv).
func applyImage(spec *ContainerSpec, pod *v1.Pod, c *v1.Container, img *LocalImage) error {
	root := RootFS{Root: img.RootFS}
	user, err := ResolveUser(pod, c, img.Config.User, root)
	if err != nil {
		return err
	}
	spec.Argv = ImageArgv(c, spec.Env, img.Config)
	spec.WorkingDir = ImageWorkingDir(c, img.Config)
	spec.RootFS = img.RootFS
	spec.User = &user
	for _, f := range hostNameFiles {
		covered := slices.ContainsFunc(spec.Mounts, func(m Mount) bool { return isUnder(f, path.Clean(m.Target)) })
		if _, err := os.Stat(f); err == nil && !covered {
			spec.Mounts = append(spec.Mounts, Mount{Source: f, Target: f, ReadOnly: true})
		}
	}
	return nil
}

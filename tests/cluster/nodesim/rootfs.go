package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// BindSourceFS is implemented by filesystems whose sandbox paths are not
// host paths. BuildArgv binds the host path BindSource returns; without it a
// sandbox path is its own bind source (the host filesystem).
type BindSourceFS interface {
	BindSource(p string) (string, error)
}

func bindSource(hfs HostFS, p string) (string, error) {
	if b, ok := hfs.(BindSourceFS); ok {
		return b.BindSource(p)
	}
	return p, nil
}

// maxSymlinks bounds symlink resolution like the kernel's ELOOP limit.
const maxSymlinks = 40

var errSymlinkLoop = errors.New("too many levels of symbolic links")

// RootFS is the HostFS of an unpacked image: sandbox path p is the host
// path Root+p. Symlinks are resolved as the kernel will once Root is the
// sandbox's "/": absolute targets and ".." stop at Root. Resolving them on
// the host instead would let an image link such as /bin -> /usr/bin (or a
// hostile ../../etc) bind the host's files into the sandbox.
type RootFS struct {
	Root string // host directory
}

func (r RootFS) host(p string) string { return filepath.Join(r.Root, filepath.FromSlash(p)) }

// resolve returns the sandbox path p with every symlink of an existing
// component evaluated inside Root; missing components are kept as written.
func (r RootFS) resolve(p string) (string, error) {
	todo := strings.Split(p, "/")
	cur := "/"
	links := 0
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			cur = path.Dir(cur)
			continue
		}
		next := path.Join(cur, c)
		fi, err := os.Lstat(r.host(next))
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		target, err := os.Readlink(r.host(next))
		if err != nil {
			return "", err
		}
		if links++; links > maxSymlinks {
			return "", fmt.Errorf("%s: %w", p, errSymlinkLoop)
		}
		if path.IsAbs(target) {
			cur = "/"
		}
		todo = append(strings.Split(target, "/"), todo...)
	}
	return cur, nil
}

// Exists reports whether p exists in the image (a final symlink is not
// followed).
func (r RootFS) Exists(p string) bool {
	p = path.Clean("/" + p)
	if p == "/" {
		_, err := os.Stat(r.Root)
		return err == nil
	}
	dir, err := r.resolve(path.Dir(p))
	if err != nil {
		return false
	}
	_, err = os.Lstat(r.host(path.Join(dir, path.Base(p))))
	return err == nil
}

// Resolve evaluates symlinks in p inside the image.
func (r RootFS) Resolve(p string) string {
	if res, err := r.resolve(p); err == nil {
		return res
	}
	return p
}

// ReadDir lists the image directory dir; symlink targets are returned as
// stored, since bwrap recreates them inside the sandbox.
func (r RootFS) ReadDir(dir string) ([]HostEntry, error) {
	res, err := r.resolve(dir)
	if err != nil {
		return nil, err
	}
	return OSFS{}.ReadDir(r.host(res))
}

// BindSource is the host path behind sandbox path p. It contains no symlink
// below Root, because bwrap follows symlinks in bind sources on the host.
func (r RootFS) BindSource(p string) (string, error) {
	res, err := r.resolve(p)
	if err != nil {
		return "", err
	}
	return r.host(res), nil
}

// ReadFile reads the image file p (used for /etc/passwd and /etc/group).
func (r RootFS) ReadFile(p string) ([]byte, error) {
	src, err := r.BindSource(p)
	if err != nil {
		return nil, err
	}
	return os.ReadFile(src)
}

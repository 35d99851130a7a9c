package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// The kubelet's read-only log API, which kube-apiserver proxies
// GET pods/log (`kubectl logs`) to: https://<node address>:<kubelet port>
// /containerLogs/<namespace>/<pod>/<container>. One server answers for all
// simulated nodes, since pod names are unique per namespace.

// logPollInterval is how often a follow request looks for appended data.
// nodesim's container processes write straight into the log file, so there
// is nothing to wake a reader; polling keeps it simple.
const logPollInterval = 200 * time.Millisecond

// rfc3339NanoFixed is the kubelet's timestamp format (fixed width, unlike
// time.RFC3339Nano), so that tools which parse kubelet output parse ours.
const rfc3339NanoFixed = "2006-01-02T15:04:05.000000000Z07:00"

// LogServer serves container logs over HTTPS on 127.0.0.1.
type LogServer struct {
	srv    *http.Server
	ln     net.Listener
	cancel context.CancelFunc
	done   chan struct{}
	log    *slog.Logger
}

// StartLogServer listens on addr (e.g. "127.0.0.1:0" for a free port) with a
// fresh self-signed certificate for NodeIP and the node names, and serves
// k's container logs.
func StartLogServer(k *Kubelet, addr string, nodes []string, log *slog.Logger) (*LogServer, error) {
	cert, err := selfSignedCert(nodes, time.Now())
	if err != nil {
		return nil, fmt.Errorf("log server certificate: %w", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("log server: %w", err)
	}
	log = log.With("component", "logs")
	mux := http.NewServeMux()
	mux.HandleFunc("GET /containerLogs/{namespace}/{pod}/{container}", k.ServeContainerLogs)
	// Streams end when this context does, so that Close does not wait for
	// followers of containers that keep running.
	base, cancel := context.WithCancel(context.Background())
	s := &LogServer{
		srv: &http.Server{
			Handler:           mux,
			TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
			ReadHeaderTimeout: 10 * time.Second,
			BaseContext:       func(net.Listener) context.Context { return base },
			ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		},
		ln:     ln,
		cancel: cancel,
		done:   make(chan struct{}),
		log:    log,
	}
	go func() {
		defer close(s.done)
		if err := s.srv.ServeTLS(ln, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("log server stopped", "err", err)
		}
	}()
	log.Info("log server listening", "addr", ln.Addr().String())
	return s, nil
}

// Port is the TCP port the server listens on.
func (s *LogServer) Port() int { return s.ln.Addr().(*net.TCPAddr).Port }

// Close ends open streams and stops the server.
func (s *LogServer) Close() {
	s.cancel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil {
		_ = s.srv.Close()
	}
	<-s.done
}

// selfSignedCert makes the serving certificate. kube-apiserver does not
// verify it (scripts/cluster sets no --kubelet-certificate-authority), but a
// real certificate for the addresses it dials keeps curl and Go clients
// honest.
func selfSignedCert(nodes []string, now time.Time) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "nodesim kubelet"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IPAddresses:           []net.IP{net.ParseIP(NodeIP)},
		DNSNames:              nodes,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, nil
}

// Run index. A container's log is appended across restarts, but the kubelet
// shows one run (the current one, or with previous=true the one before).
// Each start therefore appends "<log size before the start> <container ID>"
// to <container>.runs beside the log; a run is the byte range from its
// offset to the next run's. It is a file, not memory, so that a restarted
// nodesim still serves the runs of pods that finished before it stopped.

func runsPath(logPath string) string { return strings.TrimSuffix(logPath, ".log") + ".runs" }

// recordRun appends the start of run id at offset to the run index of logPath.
func recordRun(logPath string, offset int64, id string) error {
	f, err := os.OpenFile(runsPath(logPath), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(f, "%d %s\n", offset, id)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// runRange returns the byte range [start, end) of run id in logPath; end is
// -1 if no run started after it. A container ID can recur (a run cut short
// by a nodesim restart is started again under the same restart count): the
// last one wins.
func runRange(logPath, id string) (start, end int64, found bool, err error) {
	f, err := os.Open(runsPath(logPath))
	if errors.Is(err, os.ErrNotExist) {
		return 0, 0, false, nil
	}
	if err != nil {
		return 0, 0, false, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		off, rid, ok := strings.Cut(sc.Text(), " ")
		n, perr := strconv.ParseInt(off, 10, 64)
		if !ok || perr != nil {
			continue // a line torn by a crash
		}
		if found && end < 0 {
			end = n
		}
		if rid == id {
			start, end, found = n, -1, true
		}
	}
	return start, end, found, sc.Err()
}

// logOptions are the query parameters of a containerLogs request.
type logOptions struct {
	tailLines  int64 // -1: all
	limitBytes int64 // -1: no limit
	since      time.Time
	timestamps bool
	follow     bool
	previous   bool
}

// httpError is an answer other than 200.
type httpError struct {
	code int
	msg  string
}

func (e *httpError) Error() string { return e.msg }

func badRequest(format string, a ...any) *httpError {
	return &httpError{http.StatusBadRequest, fmt.Sprintf(format, a...)}
}

// parseLogOptions reads the parameters kube-apiserver sends (pod.LogLocation)
// and the kubelet's legacy "tail".
func parseLogOptions(q url.Values, now time.Time) (logOptions, *httpError) {
	o := logOptions{tailLines: -1, limitBytes: -1}
	var err error
	flag := func(name string, dst *bool) {
		if v := q.Get(name); v != "" && err == nil {
			if *dst, err = strconv.ParseBool(v); err != nil {
				err = fmt.Errorf("%s: %w", name, err)
			}
		}
	}
	num := func(name string, dst *int64, least int64) {
		if v := q.Get(name); v != "" && err == nil {
			if *dst, err = strconv.ParseInt(v, 10, 64); err != nil {
				err = fmt.Errorf("%s: %w", name, err)
			} else if *dst < least {
				err = fmt.Errorf("%s must be at least %d", name, least)
			}
		}
	}
	if t := q.Get("tail"); t != "" && t != "all" && q.Get("tailLines") == "" {
		q = cloneValues(q)
		q.Set("tailLines", t)
	}
	flag("timestamps", &o.timestamps)
	flag("follow", &o.follow)
	flag("previous", &o.previous)
	num("tailLines", &o.tailLines, 0)
	num("limitBytes", &o.limitBytes, 1)
	var sinceSeconds int64
	num("sinceSeconds", &sinceSeconds, 1)
	if err != nil {
		return o, badRequest("invalid log options: %v", err)
	}
	if sinceSeconds > 0 {
		o.since = now.Add(-time.Duration(sinceSeconds) * time.Second)
	}
	if v := q.Get("sinceTime"); v != "" {
		if sinceSeconds > 0 {
			return o, badRequest("invalid log options: at most one of sinceTime and sinceSeconds")
		}
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return o, badRequest("invalid log options: sinceTime: %v", err)
		}
		o.since = t
	}
	// stdout and stderr share one file here, so only both can be served.
	if s := q.Get("stream"); s != "" && s != string(v1.LogStreamAll) {
		return o, badRequest("unable to return the given log stream: %q: nodesim keeps stdout and stderr in one file", s)
	}
	return o, nil
}

func cloneValues(q url.Values) url.Values {
	c := url.Values{}
	for k, v := range q {
		c[k] = append([]string(nil), v...)
	}
	return c
}

// logRun is the run of a container that a request is for.
type logRun struct {
	path      string // the container's log file
	id        string // container ID of the run
	startedAt time.Time
	ended     time.Time // zero while running
}

// ServeContainerLogs answers GET /containerLogs/{namespace}/{pod}/{container}.
func (k *Kubelet) ServeContainerLogs(w http.ResponseWriter, r *http.Request) {
	ns, name, container := r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("container")
	k.log.Debug("container log request", "path", r.URL.Path, "query", r.URL.RawQuery)
	opts, herr := parseLogOptions(r.URL.Query(), time.Now())
	if herr == nil {
		var run logRun
		run, herr = k.logRunFor(ns, name, container, opts.previous)
		if herr == nil {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			herr = k.serveRun(r.Context(), w, run, opts)
		}
	}
	if herr != nil {
		k.log.Info("container log request refused", "path", r.URL.Path, "code", herr.code, "err", herr.msg)
		http.Error(w, herr.msg, herr.code)
	}
}

// logRunFor picks the run to serve the way the kubelet does
// (validateContainerLogStatus): from the container's status.
func (k *Kubelet) logRunFor(ns, name, container string, previous bool) (logRun, *httpError) {
	pod, err := k.podLister.Pods(ns).Get(name)
	if err != nil || !k.ownsNode(pod.Spec.NodeName) {
		if err != nil && !apierrors.IsNotFound(err) {
			return logRun{}, &httpError{http.StatusInternalServerError, err.Error()}
		}
		return logRun{}, &httpError{http.StatusNotFound, fmt.Sprintf("pod %q does not exist on the nodesim nodes", ns+"/"+name)}
	}
	// A lost node's kubelet is a dead machine's: the apiserver would fail to
	// dial it and answer 500. 500 also keeps this message in kubectl's error.
	if k.faults.Current().NodeLost(pod.Spec.NodeName) {
		return logRun{}, &httpError{http.StatusInternalServerError,
			fmt.Sprintf("node %s is lost (nodesim fault lostNodes): its kubelet does not answer", pod.Spec.NodeName)}
	}
	if !hasContainer(pod, container) {
		return logRun{}, &httpError{http.StatusNotFound, fmt.Sprintf("container %q not found in pod %q", container, ns+"/"+name)}
	}
	st, ok := k.containerStatus(pod, container)
	if !ok {
		return logRun{}, badRequest("container %q in pod %q is not available", container, name)
	}
	run := logRun{path: filepath.Join(k.workdir, "pods", ns+"_"+name, container+".log")}
	last := st.LastTerminationState.Terminated
	fromTerminated := func(t *v1.ContainerStateTerminated) {
		run.id, run.startedAt, run.ended = t.ContainerID, t.StartedAt.Time, t.FinishedAt.Time
	}
	switch running, term, waiting := st.State.Running, st.State.Terminated, st.State.Waiting; {
	case previous:
		if last == nil || last.ContainerID == "" {
			return logRun{}, badRequest("previous terminated container %q in pod %q not found", container, name)
		}
		fromTerminated(last)
	case running != nil:
		run.id, run.startedAt = st.ContainerID, running.StartedAt.Time
	case term != nil && term.ContainerID != "":
		fromTerminated(term)
	case term != nil || last != nil:
		if last == nil || last.ContainerID == "" {
			return logRun{}, badRequest("container %q in pod %q is terminated", container, name)
		}
		fromTerminated(last)
	case waiting != nil:
		return logRun{}, badRequest("container %q in pod %q is waiting to start: %s", container, name, waiting.Reason)
	default:
		return logRun{}, badRequest("container %q in pod %q is waiting to start - no logs yet", container, name)
	}
	return run, nil
}

func hasContainer(pod *v1.Pod, name string) bool {
	for _, cs := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			if cs[i].Name == name {
				return true
			}
		}
	}
	return false
}

// containerStatus is the status of a container as nodesim knows it: its pod
// worker's, which runs ahead of the API, or else the API's (the pod has
// finished, or nodesim was restarted).
func (k *Kubelet) containerStatus(pod *v1.Pod, name string) (v1.ContainerStatus, bool) {
	k.mu.Lock()
	w := k.workers[pod.Namespace+"/"+pod.Name]
	k.mu.Unlock()
	init, main := pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses
	if w != nil && w.uid == pod.UID {
		w.mu.Lock()
		init, main = cloneStatuses(w.st.Init), cloneStatuses(w.st.Main)
		w.mu.Unlock()
	}
	for _, list := range [][]v1.ContainerStatus{main, init} {
		for _, s := range list {
			if s.Name == name {
				return s, true
			}
		}
	}
	return v1.ContainerStatus{}, false
}

// trackRun makes run id followable until its process exits (done); the
// returned function forgets it.
func (k *Kubelet) trackRun(id string, done <-chan struct{}) func() {
	k.runsMu.Lock()
	k.liveRuns[id] = done
	k.runsMu.Unlock()
	return func() {
		k.runsMu.Lock()
		if k.liveRuns[id] == done {
			delete(k.liveRuns, id)
		}
		k.runsMu.Unlock()
	}
}

// liveRun returns a channel closed when run id ends, or nil if it is not
// running.
func (k *Kubelet) liveRun(id string) <-chan struct{} {
	k.runsMu.Lock()
	defer k.runsMu.Unlock()
	return k.liveRuns[id]
}

// runBounds returns where run.id starts in its log and where it ends now:
// at the next run's start, or at the current end of the file.
func runBounds(run logRun) (start, end int64, mtime time.Time, found bool, err error) {
	// Stat before reading the index: a run that starts after the index was
	// read starts at or after this size, so [start, size) never includes it.
	var size int64
	if fi, serr := os.Stat(run.path); serr == nil {
		size, mtime = fi.Size(), fi.ModTime()
	}
	start, end, found, err = runRange(run.path, run.id)
	if !found || err != nil {
		return 0, 0, mtime, found, err
	}
	if end < 0 || end > size {
		end = size
	}
	return min(start, end), end, mtime, true, nil
}

// serveRun writes the run's log applying opts. Errors after the first byte
// cannot change the status any more; they only end the stream.
func (k *Kubelet) serveRun(ctx context.Context, w http.ResponseWriter, run logRun, opts logOptions) *httpError {
	start, end, mtime, found, err := runBounds(run)
	if err != nil {
		return &httpError{http.StatusInternalServerError, err.Error()}
	}
	// A run without an entry wrote nothing: an injected failure, a
	// container without a command, or a pod directory that belongs to
	// another pod of the same name.
	var done <-chan struct{}
	if opts.follow && found {
		done = k.liveRun(run.id)
	}

	// Lines carry no times, so sinceTime is exact only when the whole run
	// is on one side of it: started after it (all) or last written before
	// it (none); otherwise the whole run is sent.
	if !opts.since.IsZero() && run.startedAt.Before(opts.since) {
		last := mtime
		if !run.ended.IsZero() && run.ended.Before(last) {
			last = run.ended
		}
		if last.Before(opts.since) {
			start = end
		}
	}

	f, err := os.Open(run.path)
	if errors.Is(err, os.ErrNotExist) {
		start, end = 0, 0
	} else if err != nil {
		return &httpError{http.StatusInternalServerError, err.Error()}
	} else {
		defer f.Close()
	}
	if opts.tailLines >= 0 && start < end {
		if start, err = tailStart(f, start, end, opts.tailLines); err != nil {
			return &httpError{http.StatusInternalServerError, err.Error()}
		}
	}

	rc := http.NewResponseController(w)
	var out io.Writer = w
	if opts.limitBytes >= 0 {
		out = &limitWriter{w: out, remain: opts.limitBytes}
	}
	if opts.timestamps {
		out = &timestampWriter{w: out, atLineStart: true, now: time.Now}
	}
	w.WriteHeader(http.StatusOK)
	if done != nil {
		// The apiserver waits for the response header before it streams.
		_ = rc.Flush()
	}
	pos := start
	copyTo := func(end int64) error {
		if end <= pos {
			return nil
		}
		n, err := io.Copy(out, io.NewSectionReader(f, pos, end-pos))
		pos += n
		return err
	}
	if err := copyTo(end); err != nil || done == nil {
		return nil
	}
	_ = rc.Flush()
	tick := time.NewTicker(logPollInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-done:
			// The run is over: send the rest of it, but not the next run's.
			if _, end, _, _, err := runBounds(run); err == nil {
				_ = copyTo(end)
			}
			return nil
		case <-tick.C:
		}
		fi, err := f.Stat()
		if err != nil {
			return nil
		}
		if err := copyTo(fi.Size()); err != nil {
			return nil
		}
		_ = rc.Flush()
	}
}

// tailStart returns the offset in [start, end) where the last n lines
// begin. Only '\n' ends a line (a '\r' progress line is part of the line
// it is in, as for the kubelet); a final line without '\n' counts.
func tailStart(f io.ReaderAt, start, end, n int64) (int64, error) {
	if n == 0 {
		return end, nil
	}
	const chunk = 32 << 10
	buf := make([]byte, chunk)
	pos := end
	skipFinal := true // a '\n' that ends the data ends a line, it does not start one
	for pos > start {
		size := min(int64(chunk), pos-start)
		b := buf[:size]
		if _, err := f.ReadAt(b, pos-size); err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		for i := len(b) - 1; i >= 0; i-- {
			if b[i] != '\n' {
				skipFinal = false
				continue
			}
			if skipFinal {
				skipFinal = false
				continue
			}
			if n--; n == 0 {
				return pos - size + int64(i) + 1, nil
			}
		}
		pos -= size
	}
	return start, nil
}

// errLimitReached ends a copy when limitBytes have been sent.
var errLimitReached = errors.New("limitBytes reached")

// limitWriter passes at most remain bytes, then fails with errLimitReached.
type limitWriter struct {
	w      io.Writer
	remain int64
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if l.remain <= 0 {
		return 0, errLimitReached
	}
	full := len(p)
	if int64(len(p)) > l.remain {
		p = p[:l.remain]
	}
	n, err := l.w.Write(p)
	l.remain -= int64(n)
	if err == nil && (n < full || l.remain == 0) {
		err = errLimitReached
	}
	return n, err
}

// timestampWriter prefixes every line with the time it is written: nodesim
// keeps no per-line times.
type timestampWriter struct {
	w           io.Writer
	atLineStart bool
	now         func() time.Time
}

func (t *timestampWriter) Write(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		if t.atLineStart {
			if _, err := io.WriteString(t.w, t.now().UTC().Format(rfc3339NanoFixed)+" "); err != nil {
				return written, err
			}
			t.atLineStart = false
		}
		line := p
		if i := bytes.IndexByte(p, '\n'); i >= 0 {
			line = p[:i+1]
		}
		n, err := t.w.Write(line)
		written += n
		if err != nil {
			return written, err
		}
		t.atLineStart = line[len(line)-1] == '\n'
		p = p[len(line):]
	}
	return written, nil
}

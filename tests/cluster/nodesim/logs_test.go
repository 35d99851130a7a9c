package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestTailStart(t *testing.T) {
	long := strings.Repeat("x", 40<<10) // lines that cross the 32 KiB read chunks
	cases := []struct {
		data string
		n    int64
		want string
	}{
		{"a\nb\nc\n", 2, "b\nc\n"},
		{"a\nb\nc", 2, "b\nc"},
		{"a\nb\nc\n", 0, ""},
		{"a\nb\nc", 1, "c"},
		{"a\nb\nc\n", 1, "c\n"},
		{"a\nb\nc\n", 10, "a\nb\nc\n"},
		{"a\n\n", 1, "\n"},
		{"\n", 1, "\n"},
		{"", 3, ""},
		{"progress 1%\rprogress 50%\rprogress 100%\ndone\n", 2, "progress 1%\rprogress 50%\rprogress 100%\ndone\n"},
		{"first\n" + long + "\n" + long + "\nlast", 2, long + "\nlast"},
		{long + "\n" + long + "\n", 1, long + "\n"},
	}
	for _, c := range cases {
		for _, prefix := range []string{"", "previous run\n"} {
			data := prefix + c.data
			start, err := tailStart(strings.NewReader(data), int64(len(prefix)), int64(len(data)), c.n)
			if err != nil {
				t.Fatal(err)
			}
			if got := data[start:]; got != c.want {
				t.Errorf("tail %d of %q (after %q) = %q, want %q", c.n, trunc(c.data), prefix, trunc(got), trunc(c.want))
			}
		}
	}
}

func trunc(s string) string {
	if len(s) > 40 {
		return s[:20] + "…" + s[len(s)-20:]
	}
	return s
}

func TestRunIndex(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "main.log")
	if _, _, found, err := runRange(logPath, "a"); found || err != nil {
		t.Fatalf("no index: found=%v err=%v", found, err)
	}
	for _, r := range []struct {
		off int64
		id  string
	}{{0, "a"}, {10, "b"}, {25, "c"}, {40, "b"}} {
		if err := recordRun(logPath, r.off, r.id); err != nil {
			t.Fatal(err)
		}
	}
	for id, want := range map[string][2]int64{"a": {0, 10}, "b": {40, -1}, "c": {25, 40}} {
		start, end, found, err := runRange(logPath, id)
		if !found || err != nil || start != want[0] || end != want[1] {
			t.Errorf("run %s = [%d,%d) found=%v err=%v, want %v", id, start, end, found, err, want)
		}
	}
	if _, _, found, _ := runRange(logPath, "d"); found {
		t.Error("unknown run found")
	}
}

func TestParseLogOptions(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	o, err := parseLogOptions(url.Values{
		"tailLines": {"3"}, "limitBytes": {"100"}, "timestamps": {"true"}, "follow": {"true"},
		"previous": {"false"}, "sinceSeconds": {"60"}, "stream": {"All"},
	}, now)
	if err != nil || o.tailLines != 3 || o.limitBytes != 100 || !o.timestamps || !o.follow || o.previous || !o.since.Equal(now.Add(-time.Minute)) {
		t.Errorf("options = %+v, %v", o, err)
	}
	if o, err := parseLogOptions(url.Values{}, now); err != nil || o.tailLines != -1 || o.limitBytes != -1 || !o.since.IsZero() {
		t.Errorf("defaults = %+v, %v", o, err)
	}
	if o, err := parseLogOptions(url.Values{"tail": {"7"}}, now); err != nil || o.tailLines != 7 {
		t.Errorf("legacy tail = %+v, %v", o, err)
	}
	if o, err := parseLogOptions(url.Values{"sinceTime": {"2030-01-01T00:00:00Z"}}, now); err != nil || o.since.Year() != 2030 {
		t.Errorf("sinceTime = %+v, %v", o, err)
	}
	for _, bad := range []url.Values{
		{"tailLines": {"-1"}}, {"tailLines": {"x"}}, {"limitBytes": {"0"}}, {"follow": {"maybe"}},
		{"sinceSeconds": {"5"}, "sinceTime": {"2030-01-01T00:00:00Z"}}, {"sinceTime": {"yesterday"}},
		{"stream": {"Stdout"}},
	} {
		if _, err := parseLogOptions(bad, now); err == nil || err.code != http.StatusBadRequest {
			t.Errorf("%v: err = %v, want 400", bad, err)
		}
	}
}

// logPod is a pod on a nodesim node whose main container runs (or, with
// restartCount > 0, has run before) under nodesim's container IDs.
func logPod(name string, restarts int32) *v1.Pod {
	p := simPod(name, v1.RestartPolicyAlways, "/bin/sh")
	id := func(n int32) string { return "nodesim://uid-" + name + "/main/" + strconv.Itoa(int(n)) }
	started := metav1.NewTime(time.Now().Add(-time.Minute))
	cs := v1.ContainerStatus{
		Name: "main", RestartCount: restarts, ContainerID: id(restarts),
		State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: started}},
	}
	if restarts > 0 {
		cs.LastTerminationState.Terminated = &v1.ContainerStateTerminated{
			ExitCode: 1, ContainerID: id(restarts - 1), StartedAt: started, FinishedAt: started,
		}
	}
	p.Status = v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{cs}}
	return p
}

type logEnv struct {
	*testEnv
	k       *Kubelet
	workdir string
	srv     *httptest.Server
	active  atomic.Int32 // requests being served
}

// newLogEnv serves the containerLogs API of a kubelet that runs nothing: the
// tests write the logs, run indexes and statuses themselves.
func newLogEnv(t *testing.T, objs ...runtime.Object) *logEnv {
	t.Helper()
	env := newTestEnv(t, objs...)
	workdir := t.TempDir()
	k := NewKubelet(KubeletConfig{
		Client: env.client, Factory: env.factory, Nodes: testNodes, Workdir: workdir,
		Faults: env.faults, Recorder: env.recorder, Log: env.log,
	})
	env.start(t)
	e := &logEnv{testEnv: env, k: k, workdir: workdir}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /containerLogs/{namespace}/{pod}/{container}", func(w http.ResponseWriter, r *http.Request) {
		e.active.Add(1)
		defer e.active.Add(-1)
		k.ServeContainerLogs(w, r)
	})
	e.srv = httptest.NewServer(mux)
	t.Cleanup(e.srv.Close)
	return e
}

// writeRuns writes the log of container main of pod as runs, one per
// element, and indexes them under nodesim's container IDs.
func (e *logEnv) writeRuns(t *testing.T, pod string, runs ...string) string {
	t.Helper()
	dir := filepath.Join(e.workdir, "pods", "default_"+pod)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "main.log")
	var off int64
	for i, r := range runs {
		if err := recordRun(logPath, off, "nodesim://uid-"+pod+"/main/"+strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
		appendFile(t, logPath, r)
		off += int64(len(r))
	}
	return logPath
}

func appendFile(t *testing.T, path, data string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(data); err != nil {
		t.Fatal(err)
	}
}

func (e *logEnv) get(t *testing.T, path, query string) (int, string) {
	t.Helper()
	resp, err := http.Get(e.srv.URL + "/containerLogs/" + path + "?" + query)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func TestContainerLogsServesTheRequestedRun(t *testing.T) {
	e := newLogEnv(t, logPod("web", 1), logPod("nonl", 0))
	e.writeRuns(t, "web", "old 1\nold 2\n", "line 1\nline 2\nline 3\n")
	e.writeRuns(t, "nonl", "a\nb\nc")

	for _, c := range []struct {
		path, query string
		want        string
	}{
		{"default/web/main", "", "line 1\nline 2\nline 3\n"},
		{"default/web/main", "tailLines=2", "line 2\nline 3\n"},
		{"default/web/main", "tailLines=0", ""},
		{"default/web/main", "tailLines=10", "line 1\nline 2\nline 3\n"},
		{"default/web/main", "limitBytes=9", "line 1\nli"},
		{"default/web/main", "tailLines=2&limitBytes=8", "line 2\nl"},
		{"default/web/main", "limitBytes=1000", "line 1\nline 2\nline 3\n"},
		{"default/web/main", "previous=true", "old 1\nold 2\n"},
		{"default/web/main", "previous=true&tailLines=1", "old 2\n"},
		{"default/nonl/main", "tailLines=2", "b\nc"},
		{"default/nonl/main", "tailLines=1", "c"},
		{"default/nonl/main", "", "a\nb\nc"},
		{"default/web/main", "sinceTime=" + url.QueryEscape(time.Now().Add(-time.Hour).Format(time.RFC3339)), "line 1\nline 2\nline 3\n"},
		{"default/web/main", "sinceTime=" + url.QueryEscape(time.Now().Add(time.Hour).Format(time.RFC3339)), ""},
		{"default/web/main", "follow=false&timestamps=false&stream=All", "line 1\nline 2\nline 3\n"},
	} {
		code, body := e.get(t, c.path, c.query)
		if code != http.StatusOK || body != c.want {
			t.Errorf("%s?%s = %d %q, want 200 %q", c.path, c.query, code, body, c.want)
		}
	}

	code, body := e.get(t, "default/web/main", "timestamps=true&tailLines=2")
	ts := `\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z `
	if !regexp.MustCompile(`^`+ts+`line 2\n`+ts+`line 3\n$`).MatchString(body) || code != http.StatusOK {
		t.Errorf("timestamps = %d %q", code, body)
	}
	// limitBytes counts the timestamps, as the kubelet's does.
	if code, body := e.get(t, "default/web/main", "timestamps=true&limitBytes=36"); code != http.StatusOK || len(body) != 36 || !strings.HasSuffix(body, "Z line ") {
		t.Errorf("timestamps with limitBytes = %d %q", code, body)
	}
}

func TestContainerLogsErrors(t *testing.T) {
	other := logPod("elsewhere", 0)
	other.Spec.NodeName = "real-node"
	waiting := logPod("pending", 0)
	waiting.Status.ContainerStatuses[0].State = v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ContainerCreating"}}
	e := newLogEnv(t, logPod("web", 0), other, waiting)
	e.writeRuns(t, "web", "hello\n")

	for _, c := range []struct {
		path, query string
		code        int
		msg         string
	}{
		{"default/nope/main", "", http.StatusNotFound, `pod "default/nope" does not exist`},
		{"other/web/main", "", http.StatusNotFound, `pod "other/web" does not exist`},
		{"default/elsewhere/main", "", http.StatusNotFound, `pod "default/elsewhere" does not exist`},
		{"default/web/sidecar", "", http.StatusNotFound, `container "sidecar" not found in pod "default/web"`},
		{"default/web/main", "previous=true", http.StatusBadRequest, `previous terminated container "main" in pod "web" not found`},
		{"default/pending/main", "", http.StatusBadRequest, `container "main" in pod "pending" is waiting to start: ContainerCreating`},
		{"default/web/main", "tailLines=-2", http.StatusBadRequest, "tailLines must be at least 0"},
	} {
		code, body := e.get(t, c.path, c.query)
		if code != c.code || !strings.Contains(body, c.msg) {
			t.Errorf("%s?%s = %d %q, want %d %q", c.path, c.query, code, body, c.code, c.msg)
		}
	}

	e.faults.set(map[string]string{KeyLostNodes: "sim-node-0"})
	if code, body := e.get(t, "default/web/main", ""); code != http.StatusInternalServerError || !strings.Contains(body, "lost") {
		t.Errorf("lost node = %d %q", code, body)
	}
}

func TestContainerLogsFollow(t *testing.T) {
	e := newLogEnv(t, logPod("web", 1))
	logPath := e.writeRuns(t, "web", "old\n", "one\ntwo\n")
	runEnded := make(chan struct{})
	defer e.k.trackRun("nodesim://uid-web/main/1", runEnded)()

	resp, err := http.Get(e.srv.URL + "/containerLogs/default/web/main?follow=true&tailLines=1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	readLine := func() string {
		t.Helper()
		l, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the stream: %q, %v", l, err)
		}
		return l
	}
	if l := readLine(); l != "two\n" {
		t.Fatalf("first line = %q", l)
	}
	appendFile(t, logPath, "three\n")
	if l := readLine(); l != "three\n" {
		t.Fatalf("appended line = %q", l)
	}
	// Written just before the run ends, then the next run starts: the
	// stream ends with the first run and without the second's output.
	appendFile(t, logPath, "four\n")
	fi, _ := os.Stat(logPath)
	if err := recordRun(logPath, fi.Size(), "nodesim://uid-web/main/2"); err != nil {
		t.Fatal(err)
	}
	appendFile(t, logPath, "next run\n")
	close(runEnded)
	rest := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		rest <- string(b)
	}()
	select {
	case got := <-rest:
		if got != "four\n" {
			t.Errorf("rest of the stream = %q, want %q", got, "four\n")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("follow did not end when the run ended")
	}
}

func TestContainerLogsFollowEndsWhenClientLeavesOrRunIsOver(t *testing.T) {
	e := newLogEnv(t, logPod("web", 0), logPod("done", 0))
	e.writeRuns(t, "web", "one\n")
	e.writeRuns(t, "done", "all\n")
	defer e.k.trackRun("nodesim://uid-web/main/0", make(chan struct{}))()

	// A run that is not live (it exited, or nodesim was restarted) is sent
	// as it is, and the stream ends.
	code, body := e.get(t, "default/done/main", "follow=true")
	if code != http.StatusOK || body != "all\n" {
		t.Errorf("follow of a finished run = %d %q", code, body)
	}

	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.srv.URL+"/containerLogs/default/web/main?follow=true", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if l, err := bufio.NewReader(resp.Body).ReadString('\n'); l != "one\n" || err != nil {
		t.Fatalf("first line = %q, %v", l, err)
	}
	if n := e.active.Load(); n != 1 {
		t.Fatalf("%d requests being served, want the follower", n)
	}
	cancel()
	resp.Body.Close()
	eventually(t, 5*time.Second, "the follow handler to return", func() bool { return e.active.Load() == 0 })
}

func TestLogServerTLS(t *testing.T) {
	pod := logPod("web", 0)
	e := newLogEnv(t, pod)
	e.writeRuns(t, "web", "over tls\n")
	s, err := StartLogServer(e.k, "127.0.0.1:0", testNodes, e.log)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// kube-apiserver without --kubelet-certificate-authority skips
	// verification, as this client does.
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := client.Get("https://127.0.0.1:" + strconv.Itoa(s.Port()) + "/containerLogs/default/web/main")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || string(b) != "over tls\n" {
		t.Errorf("GET = %d %q", resp.StatusCode, b)
	}
	leaf := resp.TLS.PeerCertificates[0]
	if err := leaf.VerifyHostname("127.0.0.1"); err != nil {
		t.Error(err)
	}
	for _, n := range testNodes {
		if err := leaf.VerifyHostname(n); err != nil {
			t.Error(err)
		}
	}
}

// A real container restarted by the kubelet: the log file holds both runs,
// the API serves one at a time, and a follow of the current run ends when
// it exits.
func TestKubeletServesLogsOfRealRuns(t *testing.T) {
	pod := simPod("crash", v1.RestartPolicyOnFailure, "/bin/sh", "-c",
		`echo run >> /state/runs; n=$(wc -l < /state/runs); echo "run $n line 1"; echo "run $n line 2"
[ "$n" -ge 2 ] || exit 1; sleep 2; echo "run $n end"`)
	pod.Spec.Volumes = []v1.Volume{{Name: "state", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
	pod.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "state", MountPath: "/state"}}
	e := newTestKubelet(t, pod)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /containerLogs/{namespace}/{pod}/{container}", e.k.ServeContainerLogs)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	get := func(query string) (int, string) {
		resp, err := http.Get(srv.URL + "/containerLogs/default/crash/main?" + query)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	eventually(t, 20*time.Second, "second run running", func() bool {
		cs := e.pod(t, "crash").Status.ContainerStatuses
		return len(cs) == 1 && cs[0].RestartCount == 1 && cs[0].State.Running != nil
	})
	// -f of the running second run: ends by itself once the run exits.
	start := time.Now()
	code, body := get("follow=true")
	if code != http.StatusOK || body != "run 2 line 1\nrun 2 line 2\nrun 2 end\n" {
		t.Errorf("follow = %d %q", code, body)
	}
	if time.Since(start) > 10*time.Second {
		t.Errorf("follow took %s", time.Since(start))
	}
	e.waitPhase(t, "crash", v1.PodSucceeded)
	if code, body := get("previous=true"); code != http.StatusOK || body != "run 1 line 1\nrun 1 line 2\n" {
		t.Errorf("previous = %d %q", code, body)
	}
	if code, body := get("tailLines=1"); code != http.StatusOK || body != "run 2 end\n" {
		t.Errorf("tail of the terminated run = %d %q", code, body)
	}
	if all := e.podLog("crash", "main"); all != "run 1 line 1\nrun 1 line 2\nrun 2 line 1\nrun 2 line 2\nrun 2 end\n" {
		t.Errorf("log file = %q", all)
	}
}

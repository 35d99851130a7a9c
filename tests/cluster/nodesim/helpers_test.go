package main

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
)

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testEnv struct {
	client   *fake.Clientset
	factory  informers.SharedInformerFactory
	faults   *Faults
	recorder *record.FakeRecorder
	log      *slog.Logger
	ctx      context.Context
}

func newTestEnv(t *testing.T, objs ...runtime.Object) *testEnv {
	t.Helper()
	client := fake.NewClientset(objs...)
	log := testLogger(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return &testEnv{
		client:   client,
		factory:  informers.NewSharedInformerFactory(client, 0),
		faults:   NewFaults(client, log),
		recorder: record.NewFakeRecorder(100),
		log:      log,
		ctx:      ctx,
	}
}

// start starts the informers (register listers first) and waits for sync.
func (e *testEnv) start(t *testing.T) {
	t.Helper()
	e.factory.Start(e.ctx.Done())
	for typ, ok := range e.factory.WaitForCacheSync(e.ctx.Done()) {
		if !ok {
			t.Fatalf("cache for %v did not sync", typ)
		}
	}
}

// eventually polls cond until it holds or the timeout expires.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func drainEvents(r *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-r.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

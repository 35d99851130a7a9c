package main

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
)

// klogKey renders an object as namespace/name for log lines.
func klogKey(obj metav1.Object) string {
	if obj.GetNamespace() == "" {
		return obj.GetName()
	}
	return obj.GetNamespace() + "/" + obj.GetName()
}

// newEventRecorder returns a recorder that writes core/v1 Events as the
// "nodesim" component, and a function that flushes and stops it.
func newEventRecorder(client kubernetes.Interface) (record.EventRecorder, func()) {
	b := record.NewBroadcaster()
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	return b.NewRecorder(scheme.Scheme, v1.EventSource{Component: "nodesim"}), b.Shutdown
}

// newQueue returns a rate-limited work queue with a short back-off suitable
// for a test cluster (5ms doubling, capped at maxDelay).
func newQueue(name string, maxDelay time.Duration) workqueue.TypedRateLimitingInterface[string] {
	return workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](5*time.Millisecond, maxDelay),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: name},
	)
}

// runQueue processes queue items with sync using workers goroutines until
// ctx is done. Failed items are retried with back-off.
func runQueue(ctx context.Context, q workqueue.TypedRateLimitingInterface[string], workers int, sync func(context.Context, string) error, onError func(key string, err error)) {
	go func() {
		<-ctx.Done()
		q.ShutDown()
	}()
	done := make(chan struct{})
	for range workers {
		go func() {
			defer func() { done <- struct{}{} }()
			for {
				key, shutdown := q.Get()
				if shutdown {
					return
				}
				if err := sync(ctx, key); err != nil {
					if ctx.Err() == nil {
						onError(key, err)
						q.AddRateLimited(key)
					}
				} else {
					q.Forget(key)
				}
				q.Done(key)
			}
		}()
	}
	for range workers {
		<-done
	}
}

// keyOf is the informer key of obj (namespace/name, or name), tombstones
// included.
func keyOf(obj any) (string, bool) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	return key, err == nil
}

package main

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
)

// Fault-injection ConfigMap and its keys. See README.md.
const (
	FaultsNamespace = "kube-system"
	FaultsName      = "nodesim-faults"

	KeyFailNextJobPod         = "failNextJobPod"
	KeyFailNextJobPodSelector = "failNextJobPodSelector"
	KeyFailJobPods            = "failJobPods"
	KeyPodStartDelay          = "podStartDelay"
	KeyFailProvisioning       = "failProvisioning"
	KeyLostNodes              = "lostNodes"
	KeyFailResize             = "failResize"
)

// InjectedFailureMessage is the termination message of containers whose
// failure was injected.
const InjectedFailureMessage = "nodesim: injected failure"

// FaultSet is the parsed content of the fault ConfigMap. The zero value means
// "no faults".
type FaultSet struct {
	// FailNextJobPod is set when the failNextJobPod key is present.
	FailNextJobPod *int32
	// FailNextJobPodSelector scopes FailNextJobPod (nil = every Job pod).
	FailNextJobPodSelector labels.Selector
	// FailJobPods is set while the failJobPods key is present.
	FailJobPods *int32
	// PodStartDelay delays the start of every pod.
	PodStartDelay time.Duration
	// FailProvisioning lists storage class names ("*" = all).
	FailProvisioning []string
	// FailResize lists storage class names ("*" = all).
	FailResize []string
	// LostNodes lists nodes that have "gone away".
	LostNodes []string
}

// ParseFaults parses ConfigMap data. Unparseable values are reported in the
// returned warnings and ignored.
func ParseFaults(data map[string]string) (FaultSet, []string) {
	var fs FaultSet
	var warnings []string
	exitCode := func(key string) *int32 {
		v, ok := data[key]
		if !ok {
			return nil
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
		if err != nil || n < 0 || n > 255 {
			warnings = append(warnings, fmt.Sprintf("%s=%q is not an exit code 0..255", key, v))
			return nil
		}
		c := int32(n)
		return &c
	}
	fs.FailNextJobPod = exitCode(KeyFailNextJobPod)
	fs.FailJobPods = exitCode(KeyFailJobPods)
	if v := strings.TrimSpace(data[KeyFailNextJobPodSelector]); v != "" {
		sel, err := labels.Parse(v)
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("%s=%q: %v", KeyFailNextJobPodSelector, v, err))
			// Fail closed: a broken selector matches nothing rather than everything.
			sel = labels.Nothing()
		}
		fs.FailNextJobPodSelector = sel
	}
	if v := strings.TrimSpace(data[KeyPodStartDelay]); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			warnings = append(warnings, fmt.Sprintf("%s=%q is not a non-negative Go duration", KeyPodStartDelay, v))
		} else {
			fs.PodStartDelay = d
		}
	}
	fs.FailProvisioning = splitList(data[KeyFailProvisioning])
	fs.FailResize = splitList(data[KeyFailResize])
	fs.LostNodes = splitList(data[KeyLostNodes])
	return fs, warnings
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func matchClass(list []string, class string) bool {
	return slices.Contains(list, "*") || slices.Contains(list, class)
}

// ProvisioningFails reports whether provisioning for class must fail.
func (f FaultSet) ProvisioningFails(class string) bool { return matchClass(f.FailProvisioning, class) }

// ResizeFails reports whether expansion for class must fail.
func (f FaultSet) ResizeFails(class string) bool { return matchClass(f.FailResize, class) }

// NodeLost reports whether node is marked lost.
func (f FaultSet) NodeLost(node string) bool { return slices.Contains(f.LostNodes, node) }

// Faults watches the fault ConfigMap.
type Faults struct {
	client   kubernetes.Interface
	log      *slog.Logger
	informer cache.SharedIndexInformer

	mu        sync.Mutex
	current   FaultSet
	listeners []func(old, cur FaultSet)

	consumeMu sync.Mutex // serialises failNextJobPod consumption
}

// NewFaults creates the watcher; call Start to begin watching.
func NewFaults(client kubernetes.Interface, log *slog.Logger) *Faults {
	f := &Faults{client: client, log: log.With("component", "faults")}
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0,
		informers.WithNamespace(FaultsNamespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", FaultsName).String()
		}))
	f.informer = factory.Core().V1().ConfigMaps().Informer()
	_, _ = f.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { f.update(obj) },
		UpdateFunc: func(_, obj any) { f.update(obj) },
		DeleteFunc: func(any) { f.set(nil) },
	})
	return f
}

// Start runs the informer until ctx is done.
func (f *Faults) Start(ctx context.Context) { go f.informer.Run(ctx.Done()) }

// HasSynced reports whether the initial list has been observed.
func (f *Faults) HasSynced() bool { return f.informer.HasSynced() }

// OnChange registers a listener called (synchronously, in informer order)
// whenever the fault set changes. Register before Start.
func (f *Faults) OnChange(fn func(old, cur FaultSet)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.listeners = append(f.listeners, fn)
}

// Current returns the current fault set.
func (f *Faults) Current() FaultSet {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.current
}

func (f *Faults) update(obj any) {
	cm, ok := obj.(*v1.ConfigMap)
	if !ok || cm.Name != FaultsName {
		return
	}
	f.set(cm.Data)
}

func (f *Faults) set(data map[string]string) {
	cur, warnings := ParseFaults(data)
	for _, w := range warnings {
		f.log.Warn("ignoring fault value", "problem", w)
	}
	f.mu.Lock()
	old := f.current
	f.current = cur
	listeners := slices.Clone(f.listeners)
	f.mu.Unlock()
	f.log.Info("faults updated", "data", data)
	for _, fn := range listeners {
		fn(old, cur)
	}
}

// IsJobPod reports whether pod is owned by a batch Job.
func IsJobPod(pod *v1.Pod) bool {
	for _, o := range pod.OwnerReferences {
		if o.Kind == "Job" && strings.HasPrefix(o.APIVersion, "batch/") {
			return true
		}
	}
	return false
}

// JobPodFailure decides whether a container of pod, about to start, must fail
// instead of running. It consumes failNextJobPod (exactly once: the key is
// removed with an optimistic-concurrency update of the ConfigMap) and
// otherwise honours failJobPods. It reads the ConfigMap from the API server so
// that a key set just before the pod was created is never missed.
func (f *Faults) JobPodFailure(ctx context.Context, pod *v1.Pod) (int32, bool) {
	if !IsJobPod(pod) {
		return 0, false
	}
	f.consumeMu.Lock()
	defer f.consumeMu.Unlock()
	var (
		code     int32
		consumed bool
		always   *int32
	)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		consumed, always = false, nil
		cm, err := f.client.CoreV1().ConfigMaps(FaultsNamespace).Get(ctx, FaultsName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		fs, _ := ParseFaults(cm.Data)
		always = fs.FailJobPods
		if fs.FailNextJobPod == nil {
			return nil
		}
		if fs.FailNextJobPodSelector != nil && !fs.FailNextJobPodSelector.Matches(labels.Set(pod.Labels)) {
			return nil
		}
		cm = cm.DeepCopy()
		delete(cm.Data, KeyFailNextJobPod)
		delete(cm.Data, KeyFailNextJobPodSelector)
		// cm carries the resourceVersion we read: a concurrent change makes
		// this a conflict and we re-evaluate.
		if _, err := f.client.CoreV1().ConfigMaps(FaultsNamespace).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			return err
		}
		code, consumed = *fs.FailNextJobPod, true
		return nil
	})
	if err != nil {
		f.log.Error("reading fault ConfigMap; falling back to cached faults", "pod", klogKey(pod), "err", err)
		if c := f.Current().FailJobPods; c != nil {
			return *c, true
		}
		return 0, false
	}
	if consumed {
		f.log.Info("consumed failNextJobPod", "pod", klogKey(pod), "exitCode", code)
		return code, true
	}
	if always != nil {
		f.log.Info("failJobPods applies", "pod", klogKey(pod), "exitCode", *always)
		return *always, true
	}
	return 0, false
}

// Command nodesim stands in for the node-side and storage-side components of
// a Kubernetes cluster in the stsresize proof tests: it registers fake nodes,
// acts as their kubelet (really running the commands of pods on the host in a
// bubblewrap sandbox), dynamically provisions hostPath-backed volumes for the
// sim-* storage classes and plays the CSI external-resizer for them.
//
// Usage:
//
//	nodesim --kubeconfig FILE --workdir DIR [--nodes 3] [--node-prefix sim-node-] [--log-file FILE]
//
// See README.md for the behaviour and the fault-injection ConfigMap.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

// ProvisionerName is the provisioner (and resizer) name nodesim answers to.
const ProvisionerName = "stsresize.dev/nodesim"

type options struct {
	kubeconfig string
	workdir    string
	nodes      int
	nodePrefix string
	logFile    string
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("nodesim", flag.ContinueOnError)
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "path to the kubeconfig of the cluster (required)")
	fs.StringVar(&o.workdir, "workdir", "", "directory for volumes, pod logs and the ready file (required)")
	fs.IntVar(&o.nodes, "nodes", 3, "number of nodes to simulate")
	fs.StringVar(&o.nodePrefix, "node-prefix", "sim-node-", "node name prefix; nodes are <prefix>0..<prefix>N-1")
	fs.StringVar(&o.logFile, "log-file", "", "append logs to this file instead of stderr")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	switch {
	case fs.NArg() != 0:
		return o, fmt.Errorf("unexpected arguments: %v", fs.Args())
	case o.kubeconfig == "":
		return o, errors.New("--kubeconfig is required")
	case o.workdir == "":
		return o, errors.New("--workdir is required")
	case o.nodes < 1:
		return o, errors.New("--nodes must be at least 1")
	}
	return o, nil
}

func main() {
	opts, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "nodesim:", err)
		os.Exit(2)
	}
	var out io.Writer = os.Stderr
	if opts.logFile != "" {
		f, err := os.OpenFile(opts.logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			fmt.Fprintln(os.Stderr, "nodesim:", err)
			os.Exit(1)
		}
		defer f.Close()
		out = f
	}
	log := slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if err := run(opts, log); err != nil {
		log.Error("nodesim exiting", "err", err)
		os.Exit(1)
	}
	log.Info("nodesim stopped")
}

func run(opts options, log *slog.Logger) error {
	workdir, err := filepath.Abs(opts.workdir)
	if err != nil {
		return err
	}
	for _, d := range []string{workdir, filepath.Join(workdir, "volumes"), filepath.Join(workdir, "pods")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	readyFile := filepath.Join(workdir, "nodesim.ready")
	_ = os.Remove(readyFile)

	cfg, err := clientcmd.BuildConfigFromFlags("", opts.kubeconfig)
	if err != nil {
		return fmt.Errorf("loading kubeconfig: %w", err)
	}
	cfg.UserAgent = "nodesim"
	cfg.QPS, cfg.Burst = 50, 100
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	nodeNames := make([]string, opts.nodes)
	for i := range nodeNames {
		nodeNames[i] = fmt.Sprintf("%s%d", opts.nodePrefix, i)
	}

	factory := informers.NewSharedInformerFactory(client, 30*time.Second)
	recorder, shutdownEvents := newEventRecorder(client)
	defer shutdownEvents()

	faults := NewFaults(client, log)
	runner := NewRunner(log)
	defer runner.KillAll(5 * time.Second)

	nodes := NewNodeManager(client, factory, nodeNames, faults, log)
	storage := NewStorage(client, factory, filepath.Join(workdir, "volumes"), nodeNames, faults, recorder, log)
	resizer := NewResizer(client, factory, faults, recorder, log)
	kubelet := NewKubelet(KubeletConfig{
		Client:    client,
		Factory:   factory,
		Nodes:     nodeNames,
		Workdir:   workdir,
		Faults:    faults,
		Runner:    runner,
		Recorder:  recorder,
		Log:       log,
		APIServer: cfg.Host,
	})
	// Before the nodes register: they publish the server's port.
	logServer, err := StartLogServer(kubelet, NodeIP+":0", nodeNames, log)
	if err != nil {
		return err
	}
	defer logServer.Close()
	nodes.KubeletPort = int32(logServer.Port())
	faults.OnChange(func(old, cur FaultSet) {
		nodes.FaultsChanged(old, cur)
		kubelet.FaultsChanged(old, cur)
		storage.FaultsChanged(old, cur)
		resizer.FaultsChanged(old, cur)
	})

	if err := retryStartup(ctx, log, "creating storage classes", storage.EnsureStorageClasses); err != nil {
		return err
	}
	// The faults are known before the nodes register, so that a restarted
	// nodesim neither heartbeats a lost node nor recreates its deleted object.
	faults.Start(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), faults.HasSynced) {
		return errors.New("fault ConfigMap informer did not sync")
	}
	if err := retryStartup(ctx, log, "registering nodes", nodes.Register); err != nil {
		return err
	}

	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("informer cache for %v did not sync", typ)
		}
	}

	done := make(chan struct{})
	components := []interface{ Run(context.Context) }{nodes, storage, resizer, kubelet}
	for _, c := range components {
		go func() {
			c.Run(ctx)
			done <- struct{}{}
		}()
	}

	if err := os.WriteFile(readyFile+".tmp", []byte(time.Now().UTC().Format(time.RFC3339)+"\n"), 0o644); err != nil {
		return err
	}
	if err := os.Rename(readyFile+".tmp", readyFile); err != nil {
		return err
	}
	log.Info("nodesim ready", "nodes", nodeNames, "workdir", workdir, "readyFile", readyFile)

	<-ctx.Done()
	log.Info("signal received, shutting down")
	kubelet.Shutdown()
	for range components {
		<-done
	}
	factory.Shutdown()
	return nil
}

// retryStartup retries a startup step for up to a minute: right after the
// apiserver reports ready, some bootstrap objects may not exist yet.
func retryStartup(ctx context.Context, log *slog.Logger, what string, step func(context.Context) error) error {
	deadline := time.Now().Add(time.Minute)
	for {
		err := step(ctx)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		log.Warn("startup step failed, retrying", "step", what, "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// Command kube-scheduler runs the upstream kube-scheduler from k8s.io/kubernetes unchanged.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
)

func main() { os.Exit(cli.Run(app.NewSchedulerCommand())) }

// Command kube-apiserver runs the upstream kube-apiserver from k8s.io/kubernetes unchanged.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() { os.Exit(cli.Run(app.NewAPIServerCommand())) }

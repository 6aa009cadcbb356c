// Test infrastructure, never shipped: cert-manager's controller built from the Go module proxy.
//
// The proxy serves cert-manager's main module (github.com/cert-manager/cert-manager) but not
// the modules of its commands (cmd/controller, cmd/webhook, cmd/cainjector). This program
// runs cert-manager's own controllers, from the main module's public packages, for the kinds
// our tests use: Issuers and ClusterIssuers of type CA and SelfSigned, CertificateRequests
// (approved by cert-manager's approver), and Certificates through their full lifecycle
// (trigger, key manager, request manager, issuing, readiness, revisions). Leader election,
// ACME, Vault, Venafi and the ingress and gateway shims are left out: a test runs one
// controller. It runs as a process of the test's machine (--kubeconfig) or as a pod (no
// --kubeconfig: the pod's in-cluster configuration, as cert-manager's own controller).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"sync"
	"syscall"
	"time"

	controllerpkg "github.com/cert-manager/cert-manager/pkg/controller"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/approver"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/ca"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/selfsigned"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/issuing"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/keymanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/readiness"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/requestmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/revisionmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/trigger"
	_ "github.com/cert-manager/cert-manager/pkg/controller/clusterissuers"
	_ "github.com/cert-manager/cert-manager/pkg/controller/issuers"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/ca"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/selfsigned"
	logf "github.com/cert-manager/cert-manager/pkg/logs"
	"k8s.io/klog/v2"
)

// The controllers run, by cert-manager's names for them.
var controllers = []string{
	"issuers",
	"clusterissuers",
	"certificaterequests-approver",
	"certificaterequests-issuer-ca",
	"certificaterequests-issuer-selfsigned",
	"certificates-trigger",
	"certificates-key-manager",
	"certificates-request-manager",
	"certificates-issuing",
	"certificates-readiness",
	"certificates-revision-manager",
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "the cluster's kubeconfig; empty: the pod's in-cluster configuration")
	clusterNamespace := flag.String("cluster-resource-namespace", "cert-manager", "where ClusterIssuers' Secrets live")
	workers := flag.Int("workers", 2, "workers per controller")
	// klog's flags, --v among them: the release runs the controller with --v=2, the level of
	// cert-manager's progress messages (issued, renewed, ...).
	klog.InitFlags(nil)
	flag.Parse()
	logf.InitLogs()

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *kubeconfig, *clusterNamespace, *workers); err != nil {
		fmt.Fprintln(os.Stderr, "cert-manager controller:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, kubeconfig, clusterNamespace string, workers int) error {
	opts := controllerpkg.ContextOptions{
		// Empty (and no API server host): rest.InClusterConfig, as cert-manager's controller.
		Kubeconfig:         kubeconfig,
		KubernetesAPIQPS:   20,
		KubernetesAPIBurst: 50,
		IssuerOptions:      controllerpkg.IssuerOptions{ClusterResourceNamespace: clusterNamespace},
		// cert-manager's defaults: owner references off, a failed request retried from one
		// minute on, at most one hour apart.
		CertificateOptions: controllerpkg.CertificateOptions{
			CertificateRequestMinimumBackoffDuration: time.Minute,
			CertificateRequestMaximumBackoffDuration: time.Hour,
		},
	}
	factory, err := controllerpkg.NewContextFactory(ctx, opts)
	if err != nil {
		return err
	}
	known := controllerpkg.Known()
	var run []controllerpkg.Interface
	for _, name := range controllers {
		constructor, ok := known[name]
		if !ok {
			names := make([]string, 0, len(known))
			for n := range known {
				names = append(names, n)
			}
			sort.Strings(names)
			return fmt.Errorf("no controller %q in this cert-manager (it has %v)", name, names)
		}
		controller, err := constructor(factory)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		run = append(run, controller)
	}
	// The constructors registered their informers; the factories are shared by every context.
	shared, err := factory.Build()
	if err != nil {
		return err
	}
	shared.KubeSharedInformerFactory.Start(ctx.Done())
	shared.SharedInformerFactory.Start(ctx.Done())
	shared.HTTP01ResourceMetadataInformersFactory.Start(ctx.Done())

	fmt.Fprintf(os.Stderr, "cert-manager controller: running %v\n", controllers)
	var wg sync.WaitGroup
	errs := make(chan error, len(run))
	for i, controller := range run {
		wg.Add(1)
		go func(name string, controller controllerpkg.Interface) {
			defer wg.Done()
			if err := controller.Run(workers, ctx); err != nil {
				errs <- fmt.Errorf("%s: %w", name, err)
			}
		}(controllers[i], controller)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		return err
	}
	return nil
}

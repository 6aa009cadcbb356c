// Test infrastructure, never shipped: cert-manager's cainjector built from the Go module proxy.
//
// The proxy does not serve cainjector's command module (cmd/cainjector), but its injectors are
// public packages of cert-manager's main module (pkg/controller/cainjector). This program runs
// them as cainjector does: every injectable kind (validating and mutating webhook
// configurations, APIServices, CRDs' conversion webhooks), the CA taken from a Secret
// (cert-manager.io/inject-ca-from-secret), a Certificate's Secret
// (cert-manager.io/inject-ca-from) or the apiserver's own CA (inject-apiserver-ca), Secrets
// read directly and watched by their metadata only. Leader election, metrics and health
// endpoints are left out: a test runs one cainjector. It runs as a process of the test's
// machine (--kubeconfig) or as a pod (no --kubeconfig: the pod's in-cluster configuration).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	corev1 "k8s.io/api/core/v1"
	apiext "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	apireg "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	"github.com/cert-manager/cert-manager/pkg/controller/cainjector"
	logf "github.com/cert-manager/cert-manager/pkg/logs"
)

func main() {
	// A flag set of our own: controller-runtime registers a global --kubeconfig of its own.
	flags := flag.NewFlagSet("cainjector", flag.ExitOnError)
	kubeconfig := flags.String("kubeconfig", "", "the cluster's kubeconfig; empty: the pod's in-cluster configuration")
	// klog's flags, --v among them, which the release sets (--v=2).
	klog.InitFlags(flags)
	_ = flags.Parse(os.Args[1:])
	logf.InitLogs()
	ctrl.SetLogger(logf.Log)

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *kubeconfig); err != nil {
		fmt.Fprintln(os.Stderr, "cert-manager cainjector:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, kubeconfig string) error {
	cfg, err := restConfig(kubeconfig)
	if err != nil {
		return err
	}
	cfg.UserAgent = "cert-manager-cainjector"
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, apiext.AddToScheme, apireg.AddToScheme, cmapi.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			return err
		}
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// Secrets are read from the apiserver, never cached whole: the injectors watch only
		// their metadata (as cainjector configures its manager).
		Client: client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}}},
	})
	if err != nil {
		return err
	}
	opts := cainjector.SetupOptions{
		EnableCertificatesDataSource: true,
		EnabledReconcilersFor: map[string]bool{
			cainjector.MutatingWebhookConfigurationName:   true,
			cainjector.ValidatingWebhookConfigurationName: true,
			cainjector.APIServiceName:                     true,
			cainjector.CustomResourceDefinitionName:       true,
		},
	}
	if err := cainjector.RegisterAllInjectors(ctx, mgr, opts); err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "cert-manager cainjector: running")
	return mgr.Start(ctx)
}

// The kubeconfig's client configuration, or without one the pod's in-cluster configuration
// (its ServiceAccount's token and the kubernetes Service), as cainjector's own command.
func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		return rest.InClusterConfig()
	}
	return clientcmd.BuildConfigFromFlags("", kubeconfig)
}

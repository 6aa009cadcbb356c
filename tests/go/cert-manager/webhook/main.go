// Test infrastructure, never shipped: cert-manager's webhook, built from cert-manager's main
// module as the Go module proxy serves it.
//
// The proxy does not serve the webhook's command module (cmd/webhook: 404 for every version),
// and the webhook's server is in the main module's internal packages (internal/webhook), which
// Go lets only packages of that module import. So scripts/build-cert-manager.sh copies the main
// module out of the module cache and builds this file as a package inside the copy
// (cmd-ferrometal-webhook/), where those imports are legal.
//
// It does what cmd/webhook's main and app.NewServerCommand do: cert-manager's webhook flags and
// their defaults (pkg/webhook/options), the feature gates and logging they set, their
// validation, then cmwebhook.NewCertManagerWebhookServer run until SIGINT or SIGTERM. That is
// the release's server: its admission chain (CertificateRequest identity and approval, then the
// validation of every cert-manager.io and acme.cert-manager.io resource), its /validate and
// /mutate endpoints, and TLS either from a serving certificate signed by the webhook's own CA,
// kept in a Secret (--dynamic-serving-ca-secret-namespace/-name, --dynamic-serving-dns-names),
// or from files (--tls-cert-file, --tls-private-key-file). Left out: the --config file (flags
// only) and cobra's help text.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/pflag"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/cert-manager/cert-manager/internal/apis/config/webhook/validation"
	"github.com/cert-manager/cert-manager/internal/cmd/util"
	cmwebhook "github.com/cert-manager/cert-manager/internal/webhook"
	logf "github.com/cert-manager/cert-manager/pkg/logs"
	utilfeature "github.com/cert-manager/cert-manager/pkg/util/feature"
	"github.com/cert-manager/cert-manager/pkg/webhook/options"
)

func main() {
	// As cert-manager's webhook command: a context cancelled by the first SIGINT or SIGTERM
	// (exit code 0 after a graceful stop), cert-manager's logging, also for controller-runtime,
	// whose webhook server answers the apiserver.
	ctx, exit := util.SetupExitHandler(context.Background(), util.GracefulShutdown)
	defer exit() // may call os.Exit: deferred first, so it runs last
	logf.InitLogs()
	defer logf.FlushLogs()
	ctrl.SetLogger(logf.Log)
	ctx = logf.NewContext(ctx, logf.Log, "webhook")

	if err := run(ctx, os.Args[1:]); err != nil {
		logf.Log.Error(err, "error executing command")
		util.SetExitCode(err)
	}
}

func run(ctx context.Context, args []string) error {
	// The webhook's own defaults (its v1alpha1 WebhookConfiguration, defaulted), overridden by
	// the same flags as cert-manager's webhook command.
	config, err := options.NewWebhookConfiguration()
	if err != nil {
		return err
	}
	flags := pflag.NewFlagSet("webhook", pflag.ContinueOnError)
	options.AddConfigFlags(flags, config)
	if err := flags.Parse(args); err != nil {
		return err
	}
	if err := utilfeature.DefaultMutableFeatureGate.SetFromMap(config.FeatureGates); err != nil {
		return fmt.Errorf("failed to set feature gates from flags: %w", err)
	}
	if errs := validation.ValidateWebhookConfiguration(config, nil); len(errs) > 0 {
		return fmt.Errorf("error validating flags: %w", errs.ToAggregate())
	}
	if err := logf.ValidateAndApply(&config.Logging); err != nil {
		return fmt.Errorf("failed to validate webhook logging flags: %w", err)
	}

	srv, err := cmwebhook.NewCertManagerWebhookServer(logf.FromContext(ctx, "webhook"), *config)
	if err != nil {
		return err
	}
	return srv.Run(ctx)
}

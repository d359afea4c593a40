// Command aws-efs-csi-driver-operator runs the AWS EFS CSI driver operator (`start`).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	configclient "github.com/openshift/client-go/config/clientset/versioned"
	"github.com/openshift/library-go/pkg/config/client"
	"github.com/openshift/library-go/pkg/controller/controllercmd"
	"github.com/spf13/cobra"
	k8sversion "k8s.io/apimachinery/pkg/version"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/csi-olm/csi-olm/internal/names/efs"
	"github.com/csi-olm/csi-olm/internal/version"
	"github.com/csi-olm/csi-olm/operator"
)

func main() {
	root := &cobra.Command{Use: efs.OperatorName, Short: "The AWS EFS CSI driver operator", SilenceUsage: true}
	cfg := controllercmd.NewControllerCommandConfig(efs.OperatorName, k8sversion.Info{GitVersion: version.Get().Version}, operator.RunOperator, clock.RealClock{})
	start := cfg.NewCommandWithContext(context.Background())
	start.Use = "start"
	start.Short = "Start the operator"
	// Leader election keeps two replicas from acting at once; tests that kill the operator
	// turn it off so that a restart does not wait for the dead leader's lease to expire.
	start.Flags().BoolVar(&cfg.DisableLeaderElection, "disable-leader-election", false, "run without leader election (tests only)")
	// The operator's own HTTPS endpoint serves with the cluster's TLS profile, read before it
	// starts: it does not start without it (a --config given by hand is used as it is).
	next := start.PreRunE
	start.PreRunE = func(cmd *cobra.Command, args []string) error {
		if next != nil {
			if err := next(cmd, args); err != nil {
				return err
			}
		}
		if cmd.Flags().Changed("config") {
			return nil
		}
		config, err := client.GetKubeConfigOrInClusterConfig(cmd.Flags().Lookup("kubeconfig").Value.String(), nil)
		if err != nil {
			return err
		}
		configClient, err := configclient.NewForConfig(config)
		if err != nil {
			return err
		}
		dir, err := os.MkdirTemp("", efs.OperatorName+"-tls-")
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
		defer cancel()
		path, err := operator.WriteServingConfig(ctx, configClient, dir)
		if err != nil {
			return fmt.Errorf("the operator serves only with the cluster's TLS profile: %w", err)
		}
		if err := operator.RestartOnNewProfile(cmd.Context(), configClient, path); err != nil {
			return err
		}
		return cmd.Flags().Set("config", path)
	}
	// klog's flags (-v above all), which the CSV passes, as every OpenShift operator takes them.
	klogFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(klogFlags)
	start.Flags().AddGoFlagSet(klogFlags)
	root.AddCommand(start, &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Run:   func(*cobra.Command, []string) { fmt.Println(version.Get().Version) },
	})
	if err := root.Execute(); err != nil {
		os.Exit(1)
	}
}

// Command aws-efs-csi-driver-operator runs the AWS EFS CSI driver operator (`start`).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

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

// Package migrate is the `csi-olm migrate` verb group.
package migrate

import "github.com/spf13/cobra"

// NewCommand returns the group with its verbs.
func NewCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Move installed operators: community EFS to the certified catalog, OLM-installed EBS and Manila to the cluster-storage-operator, OLM v0 installs to OLM v1",
	}
	cmd.AddCommand(newSubscription(), newCSO(), newOLMv1())
	return cmd
}

package efs

import (
	"github.com/spf13/cobra"

	"github.com/csi-olm/csi-olm/cmd/csi-olm/internal/flags"
	"github.com/csi-olm/csi-olm/internal/exitcode"
	"github.com/csi-olm/csi-olm/internal/names/efs"
	"github.com/csi-olm/csi-olm/sharedvolume/crdcheck"
)

func newCheckSharedVolumes() *cobra.Command {
	c := &crdcheck.Check{}
	cmd := &cobra.Command{
		Use:   "check-sharedvolumes",
		Short: "Check that every SharedVolume is valid under the certified SharedVolume CRD",
		Long: `Moving from the community aws-efs-operator to the certified operator with OLM v1 replaces
the SharedVolume CRD (` + efs.SharedVolumeCRD + `) with the certified one, which is
stricter: spec is required, spec.fileSystemID and spec.accessPointID have at most 64 characters,
status.phase is one of Pending, Ready, Deleting or Failed, and spec is immutable (a CEL rule).
OLM v1's CRD upgrade-safety preflight refuses that change; setting
spec.install.preflight.crdUpgradeSafety.enforcement: None on the ClusterExtension for that one
upgrade is safe only when every existing SharedVolume is valid under the certified CRD. Under
OLM v0, csi-olm migrate subscription runs the same check itself, against the CRD of each bundle
it would install: OLM v0 fails the InstallPlan on a SharedVolume the new CRD refuses.

This verb reads every SharedVolume and validates it as the API server serving the certified CRD
validates a write of it: the OpenAPI schema (types, required fields, lengths, enums, patterns),
then the x-kubernetes-validations rules, those with oldSelf as for an update that leaves the
object as it is. It does not ratchet: Kubernetes 1.30 and later let an update keep an invalid
value it does not change, but still refuse every update (a label, a finalizer removal) of a
SharedVolume without a spec, and every write that sets an invalid value: a restore, a re-apply,
a status write.

It prints each invalid SharedVolume with every failing field and why, and exits 1 when any
is invalid. It changes nothing. Run it right before the upgrade: SharedVolumes created after it
ran are not checked.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c.Out = cmd.OutOrStdout()
			return c.Run(cmd.Context())
		},
	}
	// Not flags.BindCluster: that adds --confirm, and this verb changes nothing.
	flags.BindConnection(cmd, &c.ClusterOptions, true)
	cmd.Flags().StringVarP(&c.Output, "output", "o", "text", "output: text, json or yaml")
	cmd.Long += "\n\n" + exitcode.Help("a SharedVolume is invalid under the certified CRD")
	return cmd
}

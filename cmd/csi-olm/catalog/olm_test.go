package catalog

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// run executes `catalog <args>` as csi-olm does, returning what it printed and its error.
func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := NewCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&bytes.Buffer{})
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), err
}

// The --olm switch's bad input: each refusal names the flag and says what is wrong with it.
func TestOLMFlagsRefuseBadInput(t *testing.T) {
	const certified, community = "../../../catalog/certified/v4.11", "../../../catalog/community/v4.11"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"simulate", certified, "--all", "--olm", "v2"}, `--olm: unknown OLM "v2": use v0 (Subscriptions, resolved by OLM's catalog operator) or v1 (ClusterExtensions, resolved by operator-controller)`},
		{[]string{"diff", community, certified, "--olm", "V1"}, `--olm: unknown OLM "V1"`},
		{[]string{"simulate", certified, "--olm", "v1", "--all", "--existing-operator", "cert-manager@1.14.4"}, "--existing-operator: operator-controller resolves no dependencies"},
		{[]string{"simulate", certified, "--olm", "v1", "--all", "--existing-api", "cert-manager.io/v1/Issuer"}, "--existing-api: operator-controller resolves no dependencies"},
		{[]string{"diff", community, certified, "--olm", "v1", "--existing-api", "cert-manager.io/v1/Issuer"}, "--existing-api: operator-controller resolves no dependencies"},
		{[]string{"simulate", certified, "--olm", "v1", "--all", "--version", ">=4.10 <<5"}, `--version: the API server refuses the ClusterExtension: spec.source.catalog.version: Invalid value: ">=4.10 <<5": invalid version expression`},
		{[]string{"simulate", certified, "--olm", "v1", "--all", "--version", "4.10.0-01"}, `--version: operator-controller refuses it: desired version range "4.10.0-01" is invalid: constraint parser error`},
		{[]string{"simulate", certified, "--olm", "v1", "--all", "--channel", "stable", "--channel", "Preview"}, `--channel: the API server refuses the ClusterExtension: spec.source.catalog.channels[1]: Invalid value: "Preview": channels entries must be valid DNS1123 subdomains`},
		{[]string{"simulate", certified, "--olm", "v1", "--all", "--upgrade-constraint-policy", "Always"}, `--upgrade-constraint-policy: the API server refuses the ClusterExtension: spec.source.catalog.upgradeConstraintPolicy: Invalid value: "Always"`},
		{[]string{"simulate", certified, "--olm", "v1", "--installed", "aws-efs-operator.v0.0.6"}, `CSV "aws-efs-operator.v0.0.6" is not in catalog ../../../catalog/certified/v4.11: name the catalog it was installed from with --installed-from`},
		{[]string{"simulate", certified, "--olm", "v1", "--installed", "aws-efs-csi-driver-operator.v4.11.0", "--channel", "fast"}, `has no channel "fast" (channels: 4.10, 4.11, 4.9, stable): name one with --channel`},
		{[]string{"simulate", certified, "--all", "--version", ">=4.10.0"}, "--version: a version range is a ClusterExtension's (--olm v1); a Subscription follows its channel"},
		{[]string{"simulate", certified, "--all", "--upgrade-constraint-policy", "SelfCertified"}, "--upgrade-constraint-policy: an upgrade constraint policy is a ClusterExtension's (--olm v1)"},
		{[]string{"simulate", certified, "--installed", "aws-efs-csi-driver-operator.v4.11.0", "--channel", "stable", "--channel", "4.11"}, "--channel: a Subscription names one channel, and 2 were given (stable, 4.11): several are for a ClusterExtension (--olm v1)"},
	} {
		if _, err := run(t, tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one containing %q", tc.args, err, tc.want)
		}
	}
}

func TestSimulateOLMv1(t *testing.T) {
	// A cluster upgraded from 4.10, whose ClusterCatalog now serves 4.11's catalog.
	const certified, installedFrom = "../../../catalog/certified/v4.11", "../../../catalog/certified/v4.10"
	out, err := run(t, "simulate", certified, "--olm", "v1", "--installed", "aws-efs-csi-driver-operator.v4.10.0", "--installed-from", installedFrom, "--channel", "stable")
	if err != nil {
		t.Fatal(err)
	}
	const want = `certified-v4.11: package aws-efs-operator, channel "stable" (latest aws-efs-csi-driver-operator.v4.11.0)
  installed  aws-efs-csi-driver-operator.v4.10.0 (4.10.0, from certified-v4.10)
  1. aws-efs-csi-driver-operator.v4.11.0 (4.11.0) by skipRange >=0.0.6 <4.11.0 in channel stable
  operator-controller settles on aws-efs-csi-driver-operator.v4.11.0, the latest.
`
	if out != want {
		t.Errorf("output:\n%s\nwant:\n%s", out, want)
	}
	// v0 is the default, and --channel still names a Subscription's one channel: one pinned to
	// the channel of 4.10 follows the cluster, since 4.11's release heads it too.
	out, err = run(t, "simulate", certified, "--installed", "aws-efs-csi-driver-operator.v4.10.0", "--installed-from", installedFrom, "--channel", "4.10")
	for _, want := range []string{"channel 4.10 (head aws-efs-csi-driver-operator.v4.11.0)", "OLM settles on aws-efs-csi-driver-operator.v4.11.0"} {
		if err != nil || !strings.Contains(out, want) {
			t.Errorf("v0, a Subscription to channel 4.10: output lacks %q: %v\n%s", want, err, out)
		}
	}
}

package e2e

import (
	"k8s.io/client-go/discovery"

	"github.com/csi-olm/csi-olm/testbed"
)

func discoveryFor(s *testbed.Stack) (*discovery.DiscoveryClient, error) {
	return discovery.NewDiscoveryClientForConfig(s.Config)
}

// Command coredns is CoreDNS with only the plugins of the real node's Corefile
// (testbed/realnode.go, startCoreDNS): bind, errors, kubernetes, health and ready. Built by
// `hack/tools.sh coredns` at the version ./go.mod pins. CoreDNS's own main links all of its
// plugins, cloud DNS providers and tracers among them, which is most of its build on a fresh
// machine; a Corefile naming a plugin left out fails at start with "Unknown directive".
package main

import (
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/ready"
)

func main() { coremain.Run() }

// Command etcd is the etcd server, built from the version pinned in ../../go.mod for the local
// test bed (hack/tools.sh etcd).
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }

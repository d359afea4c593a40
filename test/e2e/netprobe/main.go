// Command netprobe runs in a pod on the test bed's real node: it dials each host:port given,
// prints "<addr> ok" or "<addr> error: <why>" for each, then waits to be stopped, so that a test
// reads what the pod's network allowed from the pod's log.
package main

import (
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	for _, addr := range os.Args[1:] {
		conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			fmt.Printf("%s error: %v\n", addr, err)
			continue
		}
		conn.Close()
		fmt.Printf("%s ok\n", addr)
	}
	fmt.Println("done")
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	<-stop
}

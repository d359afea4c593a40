package kube

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
)

// PortForward forwards a free local port to a pod's port through the API server, as `kubectl
// port-forward` does, until stop is called or ctx ends. It returns the local address.
func PortForward(ctx context.Context, config *rest.Config, namespace, pod string, port int) (address string, stop func(), err error) {
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return "", nil, err
	}
	transport, upgrader, err := spdy.RoundTripperFor(config)
	if err != nil {
		return "", nil, err
	}
	url := client.CoreV1().RESTClient().Post().Resource("pods").Namespace(namespace).Name(pod).SubResource("portforward").URL()
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, url)
	stopCh, ready := make(chan struct{}), make(chan struct{})
	var once sync.Once
	stop = func() { once.Do(func() { close(stopCh) }) }
	var errOut bytes.Buffer
	fw, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{fmt.Sprintf("0:%d", port)}, stopCh, ready, nil, &errOut)
	if err != nil {
		return "", nil, fmt.Errorf("port-forwarding to pod %s/%s: %w", namespace, pod, err)
	}
	done := make(chan error, 1)
	go func() { done <- fw.ForwardPorts() }()
	go func() {
		<-ctx.Done()
		stop()
	}()
	select {
	case <-ready:
	case err := <-done:
		return "", nil, fmt.Errorf("port-forwarding to pod %s/%s: %w %s", namespace, pod, err, strings.TrimSpace(errOut.String()))
	case <-ctx.Done():
		stop()
		return "", nil, ctx.Err()
	}
	ports, err := fw.GetPorts()
	if err != nil || len(ports) != 1 {
		stop()
		return "", nil, fmt.Errorf("port-forwarding to pod %s/%s: no local port (%v)", namespace, pod, err)
	}
	return fmt.Sprintf("127.0.0.1:%d", ports[0].Local), stop, nil
}

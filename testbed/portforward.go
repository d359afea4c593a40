package testbed

import (
	"context"
	"fmt"
	"net"
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ForwardPodPort makes port-forwards to a pod's port reach target (host:port) on this machine.
// kwok plays the pod's kubelet: the API server hands it the stream, and it connects to target,
// standing in for the process a real node would run in the pod.
func (s *Stack) ForwardPodPort(ctx context.Context, namespace, pod string, port int, target string) error {
	host, targetPort, err := net.SplitHostPort(target)
	if err != nil {
		return err
	}
	p, err := strconv.Atoi(targetPort)
	if err != nil {
		return fmt.Errorf("target %s: %w", target, err)
	}
	forward := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kwok.x-k8s.io/v1alpha1",
		"kind":       "PortForward",
		"metadata":   map[string]any{"namespace": namespace, "name": pod},
		"spec": map[string]any{"forwards": []any{map[string]any{
			"ports":  []any{int64(port)},
			"target": map[string]any{"address": host, "port": int64(p)},
		}}},
	}}
	if err := s.Client.Create(ctx, forward, client.FieldOwner("testbed")); err != nil {
		return fmt.Errorf("creating kwok PortForward %s/%s: %w", namespace, pod, err)
	}
	return nil
}

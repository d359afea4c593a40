// Package testbed runs a real Kubernetes control plane, and optionally kwok and OLM, as local
// processes on loopback, for controller and end-to-end tests and for `csi-olm dev up`.
//
// Every stack has its own directory, free ports and process groups, so stacks run side by side;
// Stop kills everything it started, etcd last (kube-apiserver hangs on SIGTERM without etcd).
package testbed

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Level is how much of a cluster a stack runs.
type Level int

const (
	// APIServer is etcd and kube-apiserver: enough for controller tests.
	APIServer Level = iota
	// Full adds kube-controller-manager, kube-scheduler and kwok with one Ready node, so
	// Deployments become Available.
	Full
	// OLM adds OLM's CRDs, namespaces, global OperatorGroup and the olm and catalog operators.
	OLM
)

func (l Level) String() string {
	return [...]string{"apiserver", "full", "olm"}[l]
}

// ParseLevel reads a level name.
func ParseLevel(s string) (Level, error) {
	for l := APIServer; l <= OLM; l++ {
		if l.String() == s {
			return l, nil
		}
	}
	return 0, fmt.Errorf("unknown stack level %q: use apiserver, full or olm", s)
}

// Options configure a stack.
type Options struct {
	Level Level
	Tools Tools
	// Dir is the stack's directory; a new temporary directory when empty.
	Dir string
	// Detached processes outlive the caller (dev up); otherwise they die with it.
	Detached bool
	// Registry starts an image registry on loopback next to the cluster (Stack.Registry).
	Registry bool
	// NoCluster, with Registry, starts the registry alone: image tests need no cluster.
	NoCluster bool
	// RegistryStorage is the directory the registry keeps its images in; the stack's own when
	// empty. Stacks started one after another with the same directory serve the same images, so
	// what one pushed the next need not push again.
	RegistryStorage string
	// RealNode runs the cluster in a network namespace of its own with a real kubelet node
	// (containerd, runc, CNI, kube-proxy, CoreDNS) instead of kwok's, pulling every image from
	// the stack's registry (realnode.go). It needs root and a Full or OLM level; one runs per
	// machine.
	RealNode bool
	// AuditServiceAccounts makes the API server record every request a ServiceAccount makes
	// (Stack.AuditedRequests): how a benchmark counts an operator's requests from what the
	// server saw, not from the operator's own reckoning. Other users' requests are not recorded,
	// so a baseline run as the admin is not slowed down by it.
	AuditServiceAccounts bool
	// Logf reports progress; nil for silence.
	Logf func(format string, args ...any)
}

// Stack is a running local cluster.
type Stack struct {
	Level      Level
	Dir        string
	Kubeconfig string
	Config     *rest.Config
	Client     client.Client
	// Registry is host:port of the stack's image registry (plain HTTP on loopback), when
	// Options.Registry asked for one.
	Registry string

	opts Options
	// host records what a real node changed on the host, for Stop to undo.
	host *hostChanges
	// netnsKubeconfig is the admin kubeconfig of components inside a real node's namespace;
	// nodeKubeconfigs those of its kubelet and kube-proxy, by user.
	netnsKubeconfig string
	nodeKubeconfigs map[string]string
	nodeTokens      map[string]string
	mu              sync.Mutex
	procs           []*process
	// olmv1 is set once StartOLMv1 has run OLM v1.
	olmv1 bool
	// ready holds, by component name, the check that says it serves (faults.go waits on it
	// after a restart).
	ready map[string]func(context.Context) error
	// background ends at Stop: what the stack runs in the calling process lives until then,
	// started by goBackground so that Stop waits for it before undoing the host.
	background     context.Context
	stopBackground context.CancelFunc
	backgroundDone sync.WaitGroup
	// controllersRunning says the OpenShift controller stand-ins run (openshiftcontrollers.go).
	controllersRunning bool
	// Timings records how long each phase took to become ready.
	Timings map[string]time.Duration
}

// State is what a detached stack records so that another process can stop it.
type State struct {
	Level      string     `json:"level"`
	Dir        string     `json:"dir"`
	Kubeconfig string     `json:"kubeconfig"`
	Registry   string     `json:"registry,omitempty"`
	Processes  []*process `json:"processes"`
	// RealNode says the stack changed the host (realnode.go), which StopState undoes.
	RealNode bool `json:"realNode,omitempty"`
}

const adminUser = "admin"

// Validate refuses options no stack can run. A caller that builds the tools first
// (NeededTools, FindTools) checks them before: a real node's tools take minutes to build.
func (opts Options) Validate() error {
	if opts.NoCluster && !opts.Registry {
		return fmt.Errorf("a stack without a cluster runs only a registry: set Registry too")
	}
	if opts.RealNode && (opts.Level < Full || opts.NoCluster) {
		return fmt.Errorf("a real node needs a cluster of level full or olm, not %s", opts.Level)
	}
	return nil
}

// Start brings a stack up to the level asked for. On error, everything started is stopped.
func Start(ctx context.Context, opts Options) (s *Stack, err error) {
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if opts.RealNode {
		opts.Registry = true
	}
	if err := opts.Tools.check(opts); err != nil {
		return nil, err
	}
	dir := opts.Dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "csi-olm-stack-"); err != nil {
			return nil, err
		}
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	s = &Stack{Level: opts.Level, Dir: dir, opts: opts, Timings: map[string]time.Duration{}}
	s.background, s.stopBackground = context.WithCancel(context.Background())
	defer func() {
		if err != nil {
			s.Stop()
		}
	}()
	begin := time.Now()
	if opts.Registry {
		if err := s.startRegistry(ctx); err != nil {
			return s, err
		}
		s.Timings["registry"] = time.Since(begin)
	}
	if opts.NoCluster {
		return s, nil
	}
	if opts.RealNode {
		if err := s.prepareRealNode(ctx); err != nil {
			return s, err
		}
	}
	if err := s.startAPIServer(ctx); err != nil {
		return s, err
	}
	s.Timings["apiserver"] = time.Since(begin)
	if opts.Level >= OLM {
		if err := s.installOLMCRDs(ctx); err != nil {
			return s, err
		}
	}
	if opts.Level >= Full {
		if err := s.startControllers(ctx); err != nil {
			return s, err
		}
		if opts.RealNode {
			err = s.startRealNode(ctx)
		} else {
			err = s.startKwok(ctx)
		}
		if err != nil {
			return s, err
		}
		s.Timings["full"] = time.Since(begin)
	}
	if opts.Level >= OLM {
		olmBegin := time.Now()
		if err := s.startOLM(ctx); err != nil {
			return s, err
		}
		s.Timings["olm"] = time.Since(olmBegin)
	}
	return s, nil
}

// freePort returns a port nothing listens on right now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// componentPorts returns ports for control-plane components. Inside a real node's network
// namespace they take the well-known ports given: a port seen free on the host says nothing about
// the namespace, whose components bind ports the host never sees, so a port picked on the host can
// already be taken there (etcd's peer port was once handed to the controller-manager).
func (s *Stack) componentPorts(wellKnown ...int) ([]int, error) {
	if s.host != nil {
		return wellKnown, nil
	}
	return freePorts(len(wellKnown))
}

func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for len(ports) < n {
		p, err := freePort()
		if err != nil {
			return nil, err
		}
		dup := false
		for _, q := range ports {
			dup = dup || q == p
		}
		if !dup {
			ports = append(ports, p)
		}
	}
	return ports, nil
}

// startComponent starts a control-plane component: inside the namespace of a real node, else on
// the host.
func (s *Stack) startComponent(name string, env []string, bin string, args ...string) (*process, error) {
	if s.host != nil {
		return s.startInNetns(name, env, bin, args...)
	}
	return s.start(name, env, bin, args...)
}

func (s *Stack) start(name string, env []string, bin string, args ...string) (*process, error) {
	p, err := startProcess(s.Dir, name, s.opts.Detached, env, bin, args...)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.procs = append(s.procs, p)
	s.mu.Unlock()
	s.opts.Logf("started %s (pid %d), log %s", name, p.PID, p.Log)
	return p, nil
}

func (s *Stack) startAPIServer(ctx context.Context) error {
	ports, err := s.componentPorts(2379, 2380, securePort)
	if err != nil {
		return err
	}
	etcdClient, etcdPeer, apiPort := ports[0], ports[1], ports[2]
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(etcdClient)
	peerURL := "http://127.0.0.1:" + strconv.Itoa(etcdPeer)
	etcd, err := s.startComponent(EtcdComponent, nil, s.opts.Tools.Etcd,
		"--name=testbed", "--data-dir="+filepath.Join(s.Dir, "etcd"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=testbed="+peerURL,
		// Durability is pointless for a throwaway cluster and fsync dominates its latency.
		"--unsafe-no-fsync", "--log-level=warn")
	if err != nil {
		return err
	}
	etcdReady := func(ctx context.Context) error {
		return httpOK(ctx, s.componentHTTP(nil), etcdURL+"/health", "")
	}
	s.setReady(etcd.Name, etcdReady)
	if err := poll(ctx, etcd, "etcd health", etcdReady); err != nil {
		return err
	}

	token, err := s.writeCredentials()
	if err != nil {
		return err
	}
	certDir := filepath.Join(s.Dir, "apiserver-certs")
	args := []string{
		"--etcd-servers=" + etcdURL,
		"--cert-dir=" + certDir,
		"--token-auth-file=" + filepath.Join(s.Dir, "tokens.csv"),
		"--authorization-mode=Node,RBAC",
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + filepath.Join(s.Dir, "sa.pub"),
		"--service-account-signing-key-file=" + filepath.Join(s.Dir, "sa.key"),
		"--allow-privileged=true",
		"--v=1",
	}
	if s.opts.AuditServiceAccounts {
		auditArgs, err := s.writeAuditPolicy()
		if err != nil {
			return err
		}
		args = append(args, auditArgs...)
	}
	if s.host != nil {
		// Pods reach the API server through the kubernetes Service, which kube-proxy points at
		// the advertised node address; the host reaches it through a forwarder.
		clientCert, clientKey, err := s.writeKubeletCredentials()
		if err != nil {
			return err
		}
		args = append(args, "--bind-address=0.0.0.0", "--advertise-address="+nodeIP,
			"--secure-port="+strconv.Itoa(apiPort), "--service-cluster-ip-range="+serviceCIDR,
			"--kubelet-client-certificate="+clientCert, "--kubelet-client-key="+clientKey,
			"--kubelet-preferred-address-types=InternalIP")
	} else {
		args = append(args, "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
			"--secure-port="+strconv.Itoa(apiPort), "--service-cluster-ip-range=10.0.0.0/24",
			// No kube-proxy or pod network exists, so nothing may be routed to the service range.
			"--endpoint-reconciler-type=none")
	}
	apiserver, err := s.startComponent(APIServerComponent, nil, s.opts.Tools.APIServer, args...)
	if err != nil {
		return err
	}
	server := "https://127.0.0.1:" + strconv.Itoa(apiPort)
	if s.host != nil {
		server = "https://" + nodeIP + ":" + strconv.Itoa(apiPort)
	}
	insecure := s.componentHTTP(&tls.Config{InsecureSkipVerify: true})
	apiReady := func(ctx context.Context) error { return httpOK(ctx, insecure, server+"/readyz", token) }
	s.setReady(apiserver.Name, apiReady)
	if err := poll(ctx, apiserver, "kube-apiserver /readyz", apiReady); err != nil {
		return err
	}
	ca, err := os.ReadFile(filepath.Join(certDir, "apiserver.crt"))
	if err != nil {
		return fmt.Errorf("reading the API server's serving certificate: %w", err)
	}
	if s.host == nil {
		return s.connect(server, "", ca, token)
	}
	return s.connectRealNode(server, ca, token)
}

// componentHTTP is an HTTP client that reaches components where they listen: inside a real
// node's namespace, or on the host.
func (s *Stack) componentHTTP(tlsConfig *tls.Config) *http.Client {
	transport := &http.Transport{TLSClientConfig: tlsConfig}
	if s.host != nil {
		transport.DialContext = s.DialInNetns
	}
	return &http.Client{Transport: transport}
}

// writeCredentials creates the service-account signing key and an admin bearer token.
func (s *Stack) writeCredentials() (string, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return "", err
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return "", err
	}
	files := map[string][]byte{
		"sa.key": pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}),
		"sa.pub": pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}),
	}
	raw := make([]byte, 16)
	if _, err := rand.Read(raw); err != nil {
		return "", err
	}
	token := hex.EncodeToString(raw)
	files["tokens.csv"] = []byte(fmt.Sprintf("%s,%s,%s,\"system:masters\"\n", token, adminUser, adminUser))
	if s.host != nil {
		s.nodeTokens = map[string]string{}
		for user, group := range nodeIdentities() {
			if _, err := rand.Read(raw); err != nil {
				return "", err
			}
			t := hex.EncodeToString(raw)
			s.nodeTokens[user] = t
			files["tokens.csv"] = append(files["tokens.csv"], fmt.Sprintf("%s,%s,%s,\"%s\"\n", t, user, user, group)...)
		}
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(s.Dir, name), content, 0o600); err != nil {
			return "", err
		}
	}
	return token, nil
}

// connect writes the admin kubeconfig and builds clients from it. serverName, when set, is the
// name the server's certificate is checked against (a forwarded address is not in it).
func (s *Stack) connect(server, serverName string, ca []byte, token string) error {
	s.Kubeconfig = filepath.Join(s.Dir, "kubeconfig")
	if err := writeKubeconfig(s.Kubeconfig, server, serverName, ca, adminUser, token); err != nil {
		return err
	}
	restConfig, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig)
	if err != nil {
		return err
	}
	restConfig.QPS, restConfig.Burst = 100, 200
	// OpenShift CRDs draw schema warnings that say nothing about the code under test.
	restConfig.WarningHandlerWithContext = rest.NoWarnings{}
	s.Config = restConfig
	s.Client, err = client.New(restConfig, client.Options{Scheme: Scheme})
	return err
}

func writeKubeconfig(path, server, serverName string, ca []byte, user, token string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["testbed"] = &clientcmdapi.Cluster{Server: server, TLSServerName: serverName, CertificateAuthorityData: ca}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["testbed"] = &clientcmdapi.Context{Cluster: "testbed", AuthInfo: user}
	cfg.CurrentContext = "testbed"
	return clientcmd.WriteToFile(*cfg, path)
}

func httpOK(ctx context.Context, c *http.Client, url, token string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	return nil
}

// Stop kills every process of the stack, newest first, so etcd goes last. It is safe to call
// more than once. It first reports the CPU each component used: a test's log then says what its
// cluster cost, and the API servers are most of the end-to-end tier's CPU.
func (s *Stack) Stop() {
	s.stopBackground()
	s.backgroundDone.Wait()
	if used := cpuReport(s.CPUTimes()); used != "" {
		s.opts.Logf("stack CPU: %s", used)
	}
	stopAll(s.Processes())
	if s.host != nil {
		if err := s.host.undo(); err != nil {
			s.opts.Logf("%v", err)
		}
	}
}

// goBackground runs fn every period until the stack stops.
func (s *Stack) goBackground(fn func(context.Context), period time.Duration) {
	s.backgroundDone.Add(1)
	go func() {
		defer s.backgroundDone.Done()
		wait.UntilWithContext(s.background, fn, period)
	}()
}

// RSS is the resident memory of all the stack's processes, in bytes.
func (s *Stack) RSS() uint64 {
	var total uint64
	for _, p := range s.Processes() {
		total += RSS(p.PID)
	}
	return total
}

// CPUTimes returns the CPU time each of the stack's components has used so far, by name.
func (s *Stack) CPUTimes() map[string]time.Duration {
	times := map[string]time.Duration{}
	for _, p := range s.Processes() {
		times[p.Name] += CPUTime(p.PID)
	}
	return times
}

// cpuReport lists the components by the CPU they used, most first: "kube-apiserver 12.3 s,
// etcd 2.1 s"; "" when none used any (a stack stopped already).
func cpuReport(times map[string]time.Duration) string {
	names := slices.Collect(maps.Keys(times))
	slices.SortFunc(names, func(a, b string) int { return cmp.Or(cmp.Compare(times[b], times[a]), cmp.Compare(a, b)) })
	var parts []string
	for _, n := range names {
		if times[n] > 0 {
			parts = append(parts, fmt.Sprintf("%s %.1f s", n, times[n].Seconds()))
		}
	}
	return strings.Join(parts, ", ")
}

func stopAll(procs []*process) {
	for i := len(procs) - 1; i >= 0; i-- {
		procs[i].stop(10 * time.Second)
	}
}

// Processes lists the running components.
func (s *Stack) Processes() []*process {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*process(nil), s.procs...)
}

// State returns what another process needs to stop this stack.
func (s *Stack) State() State {
	return State{Level: s.Level.String(), Dir: s.Dir, Kubeconfig: s.Kubeconfig, Registry: s.Registry, Processes: s.Processes(), RealNode: s.host != nil}
}

// WriteState saves the stack's state as JSON.
func (s *Stack) WriteState(path string) error {
	raw, err := json.MarshalIndent(s.State(), "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, raw, 0o600)
}

// StopState stops the processes of a stack started by another process, and undoes a real
// node's host changes.
func StopState(st State) error {
	stopAll(st.Processes)
	if !st.RealNode {
		return nil
	}
	h, err := readHostChanges()
	if err != nil || h == nil || h.Dir != st.Dir {
		return err
	}
	return h.undo()
}

// LogTails returns the last lines of every component's log, for failure reports.
func (s *Stack) LogTails(lines int) string {
	var out string
	for _, p := range s.Processes() {
		out += fmt.Sprintf("----- %s (%s) -----\n%s\n", p.Name, p.Log, Tail(p.Log, lines))
	}
	return out
}

// Tools returns the binaries the stack runs with.
func (s *Stack) Tools() Tools { return s.opts.Tools }

package testbed

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"sigs.k8s.io/yaml"
)

// auditLog is the file, in the stack's directory, the API server records audited requests in.
const auditLog = "audit.log"

// writeAuditPolicy writes a policy that records, once each when the response is complete, the
// requests of ServiceAccounts, and returns the API server's flags for it.
func (s *Stack) writeAuditPolicy() ([]string, error) {
	policy := auditv1.Policy{
		TypeMeta:   metav1.TypeMeta{APIVersion: auditv1.SchemeGroupVersion.String(), Kind: "Policy"},
		OmitStages: []auditv1.Stage{auditv1.StageRequestReceived, auditv1.StageResponseStarted, auditv1.StagePanic},
		Rules: []auditv1.PolicyRule{
			{Level: auditv1.LevelMetadata, UserGroups: []string{"system:serviceaccounts"}},
			{Level: auditv1.LevelNone},
		},
	}
	raw, err := yaml.Marshal(policy)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(s.Dir, "audit-policy.yaml")
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		return nil, err
	}
	// Batching keeps the audited client's requests off the log's disk writes; the batches are
	// flushed within a second, which AuditedRequests callers wait out.
	return []string{"--audit-policy-file=" + path, "--audit-log-path=" + filepath.Join(s.Dir, auditLog),
		"--audit-log-format=json", "--audit-log-mode=batch", "--audit-log-batch-max-wait=1s"}, nil
}

// AuditedRequests returns the requests user made, as the API server recorded them, when the
// stack was started with AuditServiceAccounts. Records are flushed within a second of the
// request's end. The API server rotates its log every 100 MB (audit-<time>.log beside it):
// every file is read.
func (s *Stack) AuditedRequests(user string) ([]auditv1.Event, error) {
	if !s.opts.AuditServiceAccounts {
		return nil, fmt.Errorf("the stack records no requests: start it with AuditServiceAccounts")
	}
	rotated, err := filepath.Glob(filepath.Join(s.Dir, "audit-*.log"))
	if err != nil {
		return nil, err
	}
	var events []auditv1.Event
	for _, path := range append(rotated, filepath.Join(s.Dir, auditLog)) {
		if events, err = readAudit(path, user, events); err != nil {
			return nil, err
		}
	}
	return events, nil
}

// readAudit appends the records of user in the audit log at path to events.
func readAudit(path, user string, events []auditv1.Event) ([]auditv1.Event, error) {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return events, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for line := 1; scanner.Scan(); line++ {
		var e auditv1.Event
		if err := json.Unmarshal(scanner.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("%s line %d: %w", filepath.Base(path), line, err)
		}
		if e.User.Username == user {
			events = append(events, e)
		}
	}
	return events, scanner.Err()
}

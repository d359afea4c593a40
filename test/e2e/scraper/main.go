// Command scraper runs in a pod on the test bed's real node and scrapes one metrics endpoint as
// the cluster's Prometheus does for a ServiceMonitor endpoint: HTTPS, the server's certificate
// verified against a CA file for a server name, and the pod's ServiceAccount token as bearer. It
// prints the exposition to stdout, so that a test reads the samples from the pod's log, and exits
// non-zero with the reason when the scrape fails.
package main

import (
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

func main() {
	url := flag.String("url", "", "the endpoint to scrape")
	caFile := flag.String("ca-file", "", "the CA bundle that verifies the server (tlsConfig.caFile)")
	serverName := flag.String("server-name", "", "the name the server's certificate must carry (tlsConfig.serverName)")
	tokenFile := flag.String("bearer-token-file", "", "the bearer token (bearerTokenFile)")
	flag.Parse()
	if err := scrape(*url, *caFile, *serverName, *tokenFile); err != nil {
		fmt.Fprintln(os.Stderr, "scraper:", err)
		os.Exit(1)
	}
}

func scrape(url, caFile, serverName, tokenFile string) error {
	ca, err := os.ReadFile(caFile)
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return fmt.Errorf("%s holds no PEM certificate", caFile)
	}
	token, err := os.ReadFile(tokenFile)
	if err != nil {
		return err
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: serverName, MinVersion: tls.VersionTLS12},
	}}
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %s", url, resp.Status, body)
	}
	_, err = os.Stdout.Write(body)
	return err
}

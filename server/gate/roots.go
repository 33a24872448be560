package gate

import (
	"crypto/x509"
	"fmt"
	"os"
)

// LoadRoots reads a PEM file of code-signing roots (--gate-roots-file).
func LoadRoots(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("gate: code-signing roots: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("gate: code-signing roots: %s holds no PEM certificate", path)
	}
	return pool, nil
}

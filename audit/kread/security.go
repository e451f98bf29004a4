package kread

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/segmentio/kafka-go/sasl"
	"github.com/segmentio/kafka-go/sasl/plain"
	"github.com/segmentio/kafka-go/sasl/scram"
	"github.com/xdg-go/stringprep"
)

// TLSFiles are the inputs of a TLS client configuration: PEM files and
// whether to verify the brokers.
type TLSFiles struct {
	// CAFile holds the certificates that verify the brokers; "" uses the
	// system roots.
	CAFile string
	// CertFile holds the client certificate (chain) and KeyFile its private
	// key, for mutual TLS: both or neither. They may name the same file.
	CertFile, KeyFile string
	// InsecureSkipVerify turns off verification of the brokers' certificates.
	InsecureSkipVerify bool
}

// TLSFile says which file of TLSFiles a TLSError is about.
type TLSFile string

// The files of TLSFiles.
const (
	TLSCAFile   TLSFile = "ca"
	TLSCertFile TLSFile = "cert"
	TLSKeyFile  TLSFile = "key"
)

// TLSError is a problem with one file of a TLS client configuration. Its
// message names the path, never key material.
type TLSError struct {
	File TLSFile
	Path string
	Msg  string
}

func (e *TLSError) Error() string { return e.Msg }

// TLSConfig builds the TLS client configuration of f (TLS 1.2 or later).
// Problems with the files are *TLSError.
func TLSConfig(f TLSFiles) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: f.InsecureSkipVerify}
	if f.CAFile != "" {
		data, err := os.ReadFile(f.CAFile)
		if err != nil {
			return nil, &TLSError{File: TLSCAFile, Path: f.CAFile, Msg: fmt.Sprintf("cannot read %s: %s", f.CAFile, pathCause(err))}
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(data) {
			return nil, &TLSError{File: TLSCAFile, Path: f.CAFile, Msg: fmt.Sprintf("%s holds no PEM certificate", f.CAFile)}
		}
		cfg.RootCAs = pool
	}
	switch {
	case f.CertFile == "" && f.KeyFile == "":
	case f.CertFile == "":
		return nil, &TLSError{File: TLSCertFile, Msg: "a client certificate needs a certificate file as well as the key file " + f.KeyFile}
	case f.KeyFile == "":
		return nil, &TLSError{File: TLSKeyFile, Msg: "a client certificate needs a key file as well as the certificate file " + f.CertFile}
	default:
		cert, err := tls.LoadX509KeyPair(f.CertFile, f.KeyFile)
		if err != nil {
			// crypto/tls names the PEM problem ("private key does not
			// match public key"), never key material.
			return nil, &TLSError{File: TLSCertFile, Path: f.CertFile,
				Msg: fmt.Sprintf("loading the client certificate %s with the key %s: %s", f.CertFile, f.KeyFile, strings.TrimPrefix(pathCause(err), "tls: "))}
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// SASL mechanism names accepted by SASL.
const (
	SASLPlain       = "PLAIN"
	SASLScramSHA256 = "SCRAM-SHA-256"
	SASLScramSHA512 = "SCRAM-SHA-512"
)

// SASLField says which input of SASL a SASLError is about.
type SASLField string

// The inputs of SASL.
const (
	SASLMechanismField SASLField = "mechanism"
	SASLUsernameField  SASLField = "username"
	SASLPasswordField  SASLField = "password"
)

// SASLError is a problem with one input of SASL. Its message never holds
// the password, nor any character of it.
type SASLError struct {
	Field SASLField
	Msg   string
}

func (e *SASLError) Error() string { return e.Msg }

// SASL builds the authentication mechanism for mechanism (PLAIN,
// SCRAM-SHA-256 or SCRAM-SHA-512, in any case), or returns nil when
// mechanism is "". Problems are *SASLError.
func SASL(mechanism, username, password string) (sasl.Mechanism, error) {
	mech := strings.ToUpper(strings.TrimSpace(mechanism))
	switch mech {
	case "":
		return nil, nil
	case SASLPlain:
		return plain.Mechanism{Username: username, Password: password}, nil
	case SASLScramSHA256, SASLScramSHA512:
		// SCRAM normalizes both with SASLprep (RFC 4013); check first, since
		// the SCRAM library's own error would quote the password.
		if _, err := stringprep.SASLprep.Prepare(username); err != nil {
			msg := fmt.Sprintf("%s: the username cannot be used: %s", mech, err)
			var se stringprep.Error
			if errors.As(err, &se) {
				msg = fmt.Sprintf("%s: the username holds %U, which SASLprep (RFC 4013) does not allow", mech, se.Rune)
			}
			return nil, &SASLError{Field: SASLUsernameField, Msg: msg}
		}
		if _, err := stringprep.SASLprep.Prepare(password); err != nil {
			return nil, &SASLError{Field: SASLPasswordField,
				Msg: mech + ": the password holds a character that SASLprep (RFC 4013) does not allow (a control or unassigned character)"}
		}
		algo := scram.SHA256
		if mech == SASLScramSHA512 {
			algo = scram.SHA512
		}
		m, err := scram.Mechanism(algo, username, password)
		if err != nil {
			return nil, &SASLError{Field: SASLPasswordField, Msg: mech + ": the username or password cannot be used"}
		}
		return m, nil
	default:
		return nil, &SASLError{Field: SASLMechanismField,
			Msg: fmt.Sprintf("%q is not one of %s, %s, %s", mechanism, SASLPlain, SASLScramSHA256, SASLScramSHA512)}
	}
}

// pathCause shortens an *fs.PathError to its cause; the caller names the path.
func pathCause(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

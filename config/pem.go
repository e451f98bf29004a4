package config

import (
	"bytes"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
)

// checkPEM returns an *Error naming key unless path is "" or a readable PEM
// file. Java key stores (JKS, JCEKS, PKCS12) get a message saying how to
// convert them.
func checkPEM(key, path string) error {
	if path == "" {
		return nil
	}
	if err := checkReadable(key, path); err != nil {
		return err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return errorf(key, "cannot read %s: %s", path, describeFileErr(err))
	}
	switch storeFormat(path, data) {
	case "PEM":
		return nil
	case "JKS", "JCEKS":
		return errorf(key, "%s is a Java key store (%s); lossaudit reads PEM files only. Convert it, e.g. "+
			"`keytool -importkeystore -srckeystore %s -destkeystore store.p12 -deststoretype PKCS12` then "+
			"`openssl pkcs12 -in store.p12 -out store.pem -nodes` (for a truststore add -nokeys)",
			path, storeFormat(path, data), path)
	case "PKCS12":
		return errorf(key, "%s is a PKCS12 key store; lossaudit reads PEM files only. Convert it, e.g. "+
			"`openssl pkcs12 -in %s -out store.pem -nodes` (for a truststore add -nokeys)", path, path)
	default:
		return errorf(key, "%s holds no PEM block (-----BEGIN ...); lossaudit reads PEM files only", path)
	}
}

// storeFormat guesses the format of a certificate or key store file: "PEM",
// "JKS", "JCEKS", "PKCS12" or "" when unknown.
func storeFormat(path string, data []byte) string {
	switch {
	case bytes.HasPrefix(data, []byte{0xFE, 0xED, 0xFE, 0xED}):
		return "JKS"
	case bytes.HasPrefix(data, []byte{0xCE, 0xCE, 0xCE, 0xCE}):
		return "JCEKS"
	case bytes.Contains(data, []byte("-----BEGIN ")):
		return "PEM"
	}
	switch strings.ToLower(filepath.Ext(path)) {
	case ".p12", ".pfx", ".pkcs12":
		return "PKCS12"
	}
	if len(data) > 0 && data[0] == 0x30 { // a DER SEQUENCE: PKCS12 is the usual Java case
		return "PKCS12"
	}
	return ""
}

// checkKeyPEM is checkPEM for a private key file: it must hold an
// unencrypted PEM private key.
func checkKeyPEM(key, path string) error {
	if err := checkPEM(key, path); err != nil || path == "" {
		return err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return errorf(key, "cannot read %s: %s", path, describeFileErr(err))
	}
	for rest := data; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return errorf(key, "%s holds no PEM private key", path)
		}
		if block.Type == "ENCRYPTED PRIVATE KEY" || block.Headers["Proc-Type"] == "4,ENCRYPTED" {
			return errorf(key, "%s holds an encrypted private key, which lossaudit cannot use; decrypt it, e.g. `openssl pkey -in %s -out key.pem`", path, path)
		}
		if strings.HasSuffix(block.Type, "PRIVATE KEY") {
			return nil
		}
	}
}

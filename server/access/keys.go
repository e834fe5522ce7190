package access

// keys are the Redis keys of the three lists, sets of entries under the
// hash tag {acl} (so one MULTI can replace several of them in a cluster).
type keys struct {
	deny, allow, bypass string
}

func newKeys(prefix string) keys {
	base := prefix + "{acl}:"
	return keys{deny: base + "deny", allow: base + "allow", bypass: base + "bypass"}
}

// named returns the lists' names and keys, in the order deny, allow, bypass.
func (k keys) named() [3]struct{ name, key string } {
	return [3]struct{ name, key string }{{"deny", k.deny}, {"allow", k.allow}, {"bypass", k.bypass}}
}

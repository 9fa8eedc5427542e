package generation

import "testing"

func TestRedisVersionParse(t *testing.T) {
	for info, want := range map[string]int{
		"# Server\r\nredis_version:7.2.4\r\nredis_git_sha1:0\r\n": 7,
		"redis_version:6.0.16\n":                                  6,
		"redis_version:255.255.255\r\n":                           255,
	} {
		v, ok := redisVersion(info)
		if !ok {
			t.Fatalf("%q: no version", info)
		}
		if m, ok := majorOf(v); !ok || m != want {
			t.Fatalf("%q: major %d, want %d", info, m, want)
		}
	}
	if _, ok := redisVersion("# Server\r\n"); ok {
		t.Fatal("version found in an INFO without one")
	}
}

package main

// The notes of the rueidis and sturdyc rows in the workload tables.

var peerNotes = map[string]map[string]string{
	"RedisHit/": {
		"rueidis": "JSON; automatic pipelining",
		"sturdyc": "JSON inside sturdyc's record; memory entries live 1 ns, so every read goes to Redis",
	},
	"RedisHitSerial/": {
		"rueidis": "JSON",
		"sturdyc": "JSON inside sturdyc's record; memory entries live 1 ns",
	},
	"LocalHit/": {
		"rueidis": "client-side caching (DoCache, RESP3 tracking); decodes on every hit",
		"sturdyc": "sharded map of decoded values",
	},
	"Zipfian/": {
		"rueidis":       "no local tier; automatic pipelining, no sharing of reads of one key",
		"rueidis+local": "client-side caching (DoCache): the server invalidates the copy",
		"sturdyc":       "memory entries live 1 ns; concurrent reads of one key share a GET",
		"sturdyc+local": "memory first, Redis as its distributed storage",
	},
	"Stampede/": {
		"rueidis": "no deduplication at all",
		"sturdyc": "in-flight table in the process only; fills Redis asynchronously",
	},
	"Penetration/": {
		"rueidis": noteNoNull,
		"sturdyc": "absence kept as a missing record in Redis",
	},
	"MassExpiry/": {
		"rueidis": "no jitter, no deduplication",
		"sturdyc": "no jitter",
	},
}

func init() {
	for i, t := range tables {
		notes, ok := peerNotes[t.prefix]
		if !ok || t.notes == nil {
			continue
		}
		for lib, note := range notes {
			if _, set := t.notes[lib]; !set {
				tables[i].notes[lib] = note
			}
		}
	}
}

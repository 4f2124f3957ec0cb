/* The emulated RT700's instruction counter: a unicorn UC_HOOK_BLOCK callback in C (hil/emu/block_count.py builds
 * and loads it). Each translation block adds its number of Thumb instructions to `executed`; the number is decoded
 * once per (address, size) from the block's code and kept in an open-addressing table. A halfword whose top five
 * bits are 0b11101, 0b11110 or 0b11111 opens a 32-bit Thumb-2 instruction (Armv8-M ARM, "Thumb instruction set
 * encoding"); any other halfword is a 16-bit instruction. The last block's address and size stay readable so the
 * caller can take back the instructions after a stop inside it. */
#include <stdint.h>
#include <stdlib.h>

typedef int (*mem_read_fn)(void *uc, uint64_t address, void *bytes, uint64_t size);

struct entry { uint64_t key; uint32_t count; };

struct counter {
    uint64_t executed;       /* instructions counted so far */
    uint64_t block_address;  /* the last block entered */
    uint32_t block_size;     /* its size in bytes; 0 once the caller took it back */
    uint32_t decodes;        /* blocks decoded (cache misses) */
    uint32_t failures;       /* blocks whose code could not be read: the count is short by them */
    mem_read_fn mem_read;    /* unicorn's uc_mem_read */
    struct entry *table;     /* key = address << 32 | size, 0 = empty */
    uint64_t capacity;       /* a power of two */
    uint64_t used;
};

/* The number of Thumb instructions in `size` bytes of `code`. */
uint32_t hil_thumb_count(const uint8_t *code, uint32_t size) {
    uint32_t count = 0, offset = 0;
    while (offset + 1 < size) {
        uint8_t top = code[offset + 1] >> 3;
        offset += (top == 0x1D || top == 0x1E || top == 0x1F) ? 4 : 2;
        count++;
    }
    return count;
}

static uint64_t slot(uint64_t key, uint64_t capacity) {
    return (key * 0x9E3779B97F4A7C15ull >> 17) & (capacity - 1);
}

static int insert(struct counter *c, uint64_t key, uint32_t count);

static int grow(struct counter *c) {
    struct entry *old = c->table;
    uint64_t old_capacity = c->capacity;
    struct entry *table = calloc(old_capacity * 2, sizeof *table);
    if (!table) return -1;
    c->table = table;
    c->capacity = old_capacity * 2;
    c->used = 0;
    for (uint64_t i = 0; i < old_capacity; i++)
        if (old[i].key) insert(c, old[i].key, old[i].count);
    free(old);
    return 0;
}

static int insert(struct counter *c, uint64_t key, uint32_t count) {
    if ((c->used + 1) * 2 > c->capacity && grow(c)) return -1;
    uint64_t i = slot(key, c->capacity);
    while (c->table[i].key && c->table[i].key != key) i = (i + 1) & (c->capacity - 1);
    if (!c->table[i].key) c->used++;
    c->table[i].key = key;
    c->table[i].count = count;
    return 0;
}

void hil_on_block(void *uc, uint64_t address, uint32_t size, void *user_data) {
    struct counter *c = user_data;
    uint64_t key = (address << 32) | size;
    uint64_t i = slot(key, c->capacity);
    c->block_address = address;
    c->block_size = size;
    while (c->table[i].key) {
        if (c->table[i].key == key) {
            c->executed += c->table[i].count;
            return;
        }
        i = (i + 1) & (c->capacity - 1);
    }
    uint8_t small[4096];
    uint8_t *code = size <= sizeof small ? small : malloc(size);
    if (!code || c->mem_read(uc, address, code, size) != 0) {
        c->failures++;  /* the caller refuses the count: it would be short */
    } else {
        uint32_t count = hil_thumb_count(code, size);
        insert(c, key, count);  /* a failed allocation only costs a decode next time */
        c->decodes++;
        c->executed += count;
    }
    if (code != small) free(code);
}

/* Forget every decoded block (code changed, or the core was reset). */
int hil_counter_forget(struct counter *c) {
    struct entry *table = calloc(1024, sizeof *table);
    if (!table) return -1;
    free(c->table);
    c->table = table;
    c->capacity = 1024;
    c->used = 0;
    return 0;
}

struct counter *hil_counter_new(mem_read_fn mem_read) {
    struct counter *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->mem_read = mem_read;
    if (hil_counter_forget(c)) { free(c); return NULL; }
    return c;
}

void hil_counter_free(struct counter *c) {
    if (c) { free(c->table); free(c); }
}

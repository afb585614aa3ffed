/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Part of posixtrace.bpf.c, the one BPF object of a stream: the arguments of
 * a USDT probe site. Userspace reads each site's note, puts its argument
 * layout in usdt_specs and attaches the site's uprobe with that entry's
 * index as the BPF cookie; no library parses the traced process's files. */
#ifndef POSIXTRACE_USDT_ARGS_BPF_H
#define POSIXTRACE_USDT_ARGS_BPF_H

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, PT_USDT_MAX_SPECS);
    __type(key, __u32);
    __type(value, struct pt_usdt_spec);
} usdt_specs SEC(".maps");

/* A context load at a constant offset, written in asm: as C, clang folds the
 * switch below into one load at a computed offset, which the verifier
 * refuses for a context pointer. pt_regs is UAPI, its layout fixed. */
#define PT_REGS_LOAD(ctx, field)                                                   \
    ({                                                                             \
        __u64 __value;                                                             \
        asm volatile("%[value] = *(u64 *)(%[base] + %[offset])"                    \
                     : [value] "=r"(__value)                                       \
                     : [base] "r"(ctx), [offset] "i"(__builtin_offsetof(struct pt_regs, field))); \
        __value;                                                                   \
    })

static __always_inline __u64 register_value(struct pt_regs *ctx, __u8 reg)
{
#if defined(__TARGET_ARCH_x86)
    switch (reg) {
    case PT_REG_AX: return PT_REGS_LOAD(ctx, ax);
    case PT_REG_BX: return PT_REGS_LOAD(ctx, bx);
    case PT_REG_CX: return PT_REGS_LOAD(ctx, cx);
    case PT_REG_DX: return PT_REGS_LOAD(ctx, dx);
    case PT_REG_SI: return PT_REGS_LOAD(ctx, si);
    case PT_REG_DI: return PT_REGS_LOAD(ctx, di);
    case PT_REG_BP: return PT_REGS_LOAD(ctx, bp);
    case PT_REG_SP: return PT_REGS_LOAD(ctx, sp);
    case PT_REG_R8: return PT_REGS_LOAD(ctx, r8);
    case PT_REG_R9: return PT_REGS_LOAD(ctx, r9);
    case PT_REG_R10: return PT_REGS_LOAD(ctx, r10);
    case PT_REG_R11: return PT_REGS_LOAD(ctx, r11);
    case PT_REG_R12: return PT_REGS_LOAD(ctx, r12);
    case PT_REG_R13: return PT_REGS_LOAD(ctx, r13);
    case PT_REG_R14: return PT_REGS_LOAD(ctx, r14);
    case PT_REG_R15: return PT_REGS_LOAD(ctx, r15);
    }
#endif
    return 0;
}

static __always_inline __u64 sized(__u64 value, __s8 size)
{
    switch (size) {
    case 1: return (__u8)value;
    case -1: return (__s64)(__s8)value;
    case 2: return (__u16)value;
    case -2: return (__s64)(__s16)value;
    case 4: return (__u32)value;
    case -4: return (__s64)(__s32)value;
    }
    return value;
}

/* The layout of the site that fired; NULL when it has none (not attached by
 * the stream, or retired: see probe_generation). */
static __always_inline const struct pt_usdt_spec *usdt_spec_of(struct pt_regs *ctx)
{
    __u64 cookie = bpf_get_attach_cookie(ctx);
    __u32 index = (__u32)cookie;

    if (!probe_is_current(cookie))
        return NULL;
    return bpf_map_lookup_elem(&usdt_specs, &index);
}

/* Reads `size` bytes (1, 2, 4, 8, signed or not) of the traced process's
 * memory: exactly the argument's bytes, so one at the end of a mapping
 * reads. 0 when unreadable. */
static __always_inline __u64 user_memory(__u64 address, __s8 size)
{
    __u64 value = 0;
    long err;

    switch (size) {
    case 1: case -1: err = bpf_probe_read_user(&value, 1, (const void *)address); break;
    case 2: case -2: err = bpf_probe_read_user(&value, 2, (const void *)address); break;
    case 4: case -4: err = bpf_probe_read_user(&value, 4, (const void *)address); break;
    default: err = bpf_probe_read_user(&value, 8, (const void *)address); break;
    }
    return err ? 0 : value;
}

/* Argument `index` of the site, as its note places it. */
static __always_inline __u64 usdt_arg(struct pt_regs *ctx, const struct pt_usdt_spec *spec,
                                      __u32 index)
{
    const struct pt_usdt_arg *arg;

    if (index >= PT_USDT_MAX_ARGS)
        return 0;
    arg = &spec->args[index];
    switch (arg->kind) {
    case PT_USDT_ARG_CONSTANT:
        return arg->value;
    case PT_USDT_ARG_REGISTER:
        return sized(register_value(ctx, arg->reg), arg->size);
    case PT_USDT_ARG_MEMORY:
        return sized(user_memory(register_value(ctx, arg->reg) + arg->value, arg->size),
                     arg->size);
    }
    return 0;
}

#endif

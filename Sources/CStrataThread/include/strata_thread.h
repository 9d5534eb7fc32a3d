#ifndef STRATA_THREAD_H
#define STRATA_THREAD_H

#include <stdint.h>
#include <pthread.h>

/// An identity of the calling thread, never 0, equal on every call from one thread and different
/// between two threads alive at once. Strata's contexts record it when a block starts on their
/// queue, and every object access compares it (`ContextLink.isOnQueue`).
///
/// On Linux on x86-64 and AArch64 it is the thread pointer, read from its register with no call:
/// the address of the thread's control block, which both glibc and musl give every thread
/// (x86-64: the TCB's first word is its own address, read through %fs; AArch64: tpidr_el0).
/// A read of an object's attribute makes this check once, and a call to `pthread_self` cost more
/// than the rest of the check (callgrind). `volatile`: the compiler must read it at each call,
/// never reuse one read across a call that can move the caller to another thread (an `await`).
/// Elsewhere it is `pthread_self()`.
static inline uintptr_t strata_current_thread(void) {
#if defined(__linux__) && defined(__x86_64__)
    uintptr_t self;
    __asm__ volatile("movq %%fs:0, %0" : "=r"(self));
    return self;
#elif defined(__linux__) && defined(__aarch64__)
    uintptr_t self;
    __asm__ volatile("mrs %0, tpidr_el0" : "=r"(self));
    return self;
#else
    return (uintptr_t)pthread_self();
#endif
}

#endif

/* Test fixtures for the plug-in loader (tests/test_plugin.cpp): one small source, built into several
 * libraries that are each wrong in one way, chosen by a compile definition:
 *   FIXTURE_ABI_VERSION=N  the table claims ABI version N
 *   FIXTURE_NO_ENTRY       flashbench_plugin is not exported
 *   FIXTURE_NO_FORWARD     the kernel's forward is NULL
 *   (none)                 a valid library whose kernel "fixture-fails" refuses causal cases in
 *                          supports() and fails every forward with a message: skipped and failed rows. */
#include <stdio.h>

#include "flashbench/plugin.h"

#ifndef FIXTURE_ABI_VERSION
#define FIXTURE_ABI_VERSION FB_PLUGIN_ABI_VERSION
#endif

static char message[128];

static const char* last_error(void) { return message; }

static int supports(const fb_params* p, char* why, size_t why_size) {
  if (p->causal) {
    snprintf(why, why_size, "fixture-fails refuses causal cases");
    return 0;
  }
  return 1;
}

static int forward(const fb_params* p, void* stream) {
  (void)stream;
  snprintf(message, sizeof message, "deliberate failure at seq_q %d", p->seq_q);
  return 7;
}

static const fb_kernel kernels[] = {{
    sizeof(fb_kernel), "fixture-fails", "a kernel that always fails", FB_DEVICE_CPU,
    FB_DTYPE_BIT(FB_FP32), FB_PASS_FWD, NULL, 0, 0, supports, NULL,
#ifdef FIXTURE_NO_FORWARD
    NULL,
#else
    forward,
#endif
    NULL,
}};

static const fb_plugin plugin = {
    sizeof(fb_plugin), FIXTURE_ABI_VERSION, "fixture", 1, kernels, last_error,
};

#ifdef FIXTURE_NO_ENTRY
const fb_plugin* some_other_name(void) { return &plugin; }
#else
const fb_plugin* flashbench_plugin(void) { return &plugin; }
#endif

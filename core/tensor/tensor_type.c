/* SPDX-License-Identifier: Apache-2.0 */
/* core/tensor/tensor_type.c: the ct_type of tensors, so that variables can hold them. */
#include <stdalign.h>

#include <corten/variable.h>

#include "tensor/tensor_impl.h"

static void tensor_obj_init(void *obj) { ct__tensor_init(obj); }

static void tensor_obj_destroy(void *obj) { ct__block_release(((ct_tensor *)obj)->block); }

const ct_type ct_tensor_type = {
    .name = "ct_tensor",
    .size = sizeof(ct_tensor),
    .align = alignof(ct_tensor),
    .init = tensor_obj_init,
    .destroy = tensor_obj_destroy,
};

ct_tensor *(ct_var_tensor)(ct_var *v) { return ct_var_get_mutable(v, &ct_tensor_type); }

const ct_tensor *(ct_var_get_tensor)(const ct_var *v) { return ct_var_get(v, &ct_tensor_type); }

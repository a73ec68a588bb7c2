/* layer_roles.c - the one table of a layer's tensor roles: GGUF names and
 * what each reads (see sl_ltensor in model.h). */
#include <stddef.h>

#include "model/model.h"

static const sl_lt_role roles[SL_LT_COUNT] = {
    [SL_LT_ATTN_NORM] = {SL_T_ATTN_NORM, SL_READS_NOTHING, false},
    [SL_LT_WQ] = {SL_T_ATTN_Q, SL_READS_INPUT, false},
    [SL_LT_WK] = {SL_T_ATTN_K, SL_READS_INPUT, false},
    [SL_LT_WV] = {SL_T_ATTN_V, SL_READS_INPUT, false},
    [SL_LT_WO] = {SL_T_ATTN_OUT, SL_READS_INPUT, false}, /* the attention output row */
    [SL_LT_BQ] = {SL_T_ATTN_Q_BIAS, SL_READS_NOTHING, false},
    [SL_LT_BK] = {SL_T_ATTN_K_BIAS, SL_READS_NOTHING, false},
    [SL_LT_BV] = {SL_T_ATTN_V_BIAS, SL_READS_NOTHING, false},
    [SL_LT_Q_NORM] = {SL_T_ATTN_Q_NORM, SL_READS_NOTHING, false},
    [SL_LT_K_NORM] = {SL_T_ATTN_K_NORM, SL_READS_NOTHING, false},
    [SL_LT_FFN_NORM] = {SL_T_FFN_NORM, SL_READS_NOTHING, false},
    [SL_LT_FFN_GATE] = {SL_T_FFN_GATE, SL_READS_INPUT, false},
    [SL_LT_FFN_UP] = {SL_T_FFN_UP, SL_READS_INPUT, false},
    [SL_LT_FFN_DOWN] = {SL_T_FFN_DOWN, SL_READS_FFN_ROWS, false},
    [SL_LT_ROUTER] = {SL_T_FFN_ROUTER, SL_READS_INPUT, false},
    [SL_LT_GATE_EXPS] = {SL_T_FFN_GATE_EXPS, SL_READS_INPUT, true},
    [SL_LT_UP_EXPS] = {SL_T_FFN_UP_EXPS, SL_READS_INPUT, true},
    [SL_LT_DOWN_EXPS] = {SL_T_FFN_DOWN_EXPS, SL_READS_FFN_ROWS, true},
    [SL_LT_GATE_SHEXP] = {SL_T_FFN_GATE_SHEXP, SL_READS_INPUT, false},
    [SL_LT_UP_SHEXP] = {SL_T_FFN_UP_SHEXP, SL_READS_INPUT, false},
    [SL_LT_DOWN_SHEXP] = {SL_T_FFN_DOWN_SHEXP, SL_READS_FFN_ROWS, false},
    [SL_LT_SHEXP_GATE] = {SL_T_FFN_SHEXP_GATE, SL_READS_NOTHING, false},
    [SL_LT_SSM_QKV] = {"attn_qkv.weight", SL_READS_INPUT, false},
    [SL_LT_SSM_Z] = {"attn_gate.weight", SL_READS_INPUT, false},
    [SL_LT_SSM_CONV] = {"ssm_conv1d.weight", SL_READS_NOTHING, false},
    [SL_LT_SSM_DT] = {"ssm_dt.bias", SL_READS_NOTHING, false},
    [SL_LT_SSM_A] = {"ssm_a", SL_READS_NOTHING, false},
    [SL_LT_SSM_BETA] = {"ssm_beta.weight", SL_READS_INPUT, false},
    [SL_LT_SSM_ALPHA] = {"ssm_alpha.weight", SL_READS_INPUT, false},
    [SL_LT_SSM_NORM] = {"ssm_norm.weight", SL_READS_NOTHING, false},
    [SL_LT_SSM_OUT] = {"ssm_out.weight", SL_READS_INPUT, false},
    [SL_LT_BO] = {"attn_output.bias", SL_READS_NOTHING, false},
    [SL_LT_SINKS] = {"attn_sinks.weight", SL_READS_NOTHING, false},
    [SL_LT_ROUTER_B] = {"ffn_gate_inp.bias", SL_READS_NOTHING, false},
    [SL_LT_GATE_EXPS_B] = {"ffn_gate_exps.bias", SL_READS_NOTHING, false},
    [SL_LT_UP_EXPS_B] = {"ffn_up_exps.bias", SL_READS_NOTHING, false},
    [SL_LT_DOWN_EXPS_B] = {"ffn_down_exps.bias", SL_READS_NOTHING, false},
    [SL_LT_GATE_EXPS_S] = {"ffn_gate_exps.scale", SL_READS_NOTHING, false},
    [SL_LT_UP_EXPS_S] = {"ffn_up_exps.scale", SL_READS_NOTHING, false},
    [SL_LT_DOWN_EXPS_S] = {"ffn_down_exps.scale", SL_READS_NOTHING, false},
    [SL_LT_POST_ATTN_NORM] = {"post_attention_norm.weight", SL_READS_NOTHING, false},
    [SL_LT_POST_FFW_NORM] = {"post_ffw_norm.weight", SL_READS_NOTHING, false},
    [SL_LT_PRE_FFW_NORM_2] = {"pre_ffw_norm_2.weight", SL_READS_NOTHING, false},
    [SL_LT_POST_FFW_NORM_1] = {"post_ffw_norm_1.weight", SL_READS_NOTHING, false},
    [SL_LT_POST_FFW_NORM_2] = {"post_ffw_norm_2.weight", SL_READS_NOTHING, false},
    [SL_LT_ROUTER_S] = {"ffn_gate_inp.scale", SL_READS_NOTHING, false},
    [SL_LT_OUT_SCALE] = {"layer_output_scale.weight", SL_READS_NOTHING, false},
    [SL_LT_GATE_UP_EXPS] = {"ffn_gate_up_exps.weight", SL_READS_INPUT, true},
    [SL_LT_EXP_PROBS_B] = {"exp_probs_b.bias", SL_READS_NOTHING, false},
    [SL_LT_WQ_A] = {"attn_q_a.weight", SL_READS_INPUT, false},
    [SL_LT_Q_A_NORM] = {"attn_q_a_norm.weight", SL_READS_NOTHING, false},
    [SL_LT_WQ_B] = {"attn_q_b.weight", SL_READS_INPUT, false},   /* the normalised q latent */
    [SL_LT_WKV_A] = {"attn_kv_a_mqa.weight", SL_READS_INPUT, false},
    [SL_LT_KV_A_NORM] = {"attn_kv_a_norm.weight", SL_READS_NOTHING, false},
    [SL_LT_WK_B] = {"attn_k_b.weight", SL_READS_INPUT, false},   /* each head's q_nope */
    [SL_LT_WV_B] = {"attn_v_b.weight", SL_READS_INPUT, false},   /* each head's latent output */
    [SL_LT_IDX_K_NORM] = {"indexer.k_norm.weight", SL_READS_NOTHING, false},
    [SL_LT_IDX_K_NORM_B] = {"indexer.k_norm.bias", SL_READS_NOTHING, false},
    [SL_LT_IDX_PROJ] = {"indexer.proj.weight", SL_READS_INPUT, false},
    [SL_LT_IDX_K] = {"indexer.attn_k.weight", SL_READS_INPUT, false},
    [SL_LT_IDX_Q_B] = {"indexer.attn_q_b.weight", SL_READS_INPUT, false}, /* the q latent */
    [SL_LT_HC_ATTN_FN] = {"hc_attn_fn.weight", SL_READS_INPUT, false}, /* the 4 streams' norm */
    [SL_LT_HC_ATTN_BASE] = {"hc_attn_base.weight", SL_READS_NOTHING, false},
    [SL_LT_HC_ATTN_SCALE] = {"hc_attn_scale.weight", SL_READS_NOTHING, false},
    [SL_LT_HC_FFN_FN] = {"hc_ffn_fn.weight", SL_READS_INPUT, false},
    [SL_LT_HC_FFN_BASE] = {"hc_ffn_base.weight", SL_READS_NOTHING, false},
    [SL_LT_HC_FFN_SCALE] = {"hc_ffn_scale.weight", SL_READS_NOTHING, false},
    [SL_LT_WKV] = {"attn_kv.weight", SL_READS_INPUT, false},
    [SL_LT_WO_A] = {"attn_output_a.weight", SL_READS_INPUT, false}, /* a group's heads */
    [SL_LT_WO_B] = {"attn_output_b.weight", SL_READS_INPUT, false}, /* the groups' ranks */
    [SL_LT_COMP_KV] = {"attn_compressor_kv.weight", SL_READS_INPUT, false},
    [SL_LT_COMP_GATE] = {"attn_compressor_gate.weight", SL_READS_INPUT, false},
    [SL_LT_COMP_APE] = {"attn_compressor_ape.weight", SL_READS_NOTHING, false},
    [SL_LT_COMP_NORM] = {"attn_compressor_norm.weight", SL_READS_NOTHING, false},
    [SL_LT_IDX_COMP_KV] = {"indexer_compressor_kv.weight", SL_READS_INPUT, false},
    [SL_LT_IDX_COMP_GATE] = {"indexer_compressor_gate.weight", SL_READS_INPUT, false},
    [SL_LT_IDX_COMP_APE] = {"indexer_compressor_ape.weight", SL_READS_NOTHING, false},
    [SL_LT_IDX_COMP_NORM] = {"indexer_compressor_norm.weight", SL_READS_NOTHING, false},
    [SL_LT_TID2EID] = {"ffn_gate_tid2eid.weight", SL_READS_NOTHING, false},
};

/* The named fields of sl_layer alias t[] in the enum's order. */
#define ROLE_AT(field, role) \
    _Static_assert(offsetof(sl_layer, field) == offsetof(sl_layer, t[role]), #field)
ROLE_AT(attn_norm, SL_LT_ATTN_NORM);
ROLE_AT(wq, SL_LT_WQ);
ROLE_AT(wk, SL_LT_WK);
ROLE_AT(wv, SL_LT_WV);
ROLE_AT(wo, SL_LT_WO);
ROLE_AT(bq, SL_LT_BQ);
ROLE_AT(bk, SL_LT_BK);
ROLE_AT(bv, SL_LT_BV);
ROLE_AT(q_norm, SL_LT_Q_NORM);
ROLE_AT(k_norm, SL_LT_K_NORM);
ROLE_AT(ffn_norm, SL_LT_FFN_NORM);
ROLE_AT(ffn_gate, SL_LT_FFN_GATE);
ROLE_AT(ffn_up, SL_LT_FFN_UP);
ROLE_AT(ffn_down, SL_LT_FFN_DOWN);
ROLE_AT(router, SL_LT_ROUTER);
ROLE_AT(gate_exps, SL_LT_GATE_EXPS);
ROLE_AT(up_exps, SL_LT_UP_EXPS);
ROLE_AT(down_exps, SL_LT_DOWN_EXPS);
ROLE_AT(gate_shexp, SL_LT_GATE_SHEXP);
ROLE_AT(up_shexp, SL_LT_UP_SHEXP);
ROLE_AT(down_shexp, SL_LT_DOWN_SHEXP);
ROLE_AT(shexp_gate, SL_LT_SHEXP_GATE);
ROLE_AT(ssm_qkv, SL_LT_SSM_QKV);
ROLE_AT(ssm_z, SL_LT_SSM_Z);
ROLE_AT(ssm_conv, SL_LT_SSM_CONV);
ROLE_AT(ssm_dt, SL_LT_SSM_DT);
ROLE_AT(ssm_a, SL_LT_SSM_A);
ROLE_AT(ssm_beta, SL_LT_SSM_BETA);
ROLE_AT(ssm_alpha, SL_LT_SSM_ALPHA);
ROLE_AT(ssm_norm, SL_LT_SSM_NORM);
ROLE_AT(ssm_out, SL_LT_SSM_OUT);
ROLE_AT(bo, SL_LT_BO);
ROLE_AT(sinks, SL_LT_SINKS);
ROLE_AT(router_b, SL_LT_ROUTER_B);
ROLE_AT(gate_exps_b, SL_LT_GATE_EXPS_B);
ROLE_AT(up_exps_b, SL_LT_UP_EXPS_B);
ROLE_AT(down_exps_b, SL_LT_DOWN_EXPS_B);
ROLE_AT(gate_exps_s, SL_LT_GATE_EXPS_S);
ROLE_AT(up_exps_s, SL_LT_UP_EXPS_S);
ROLE_AT(down_exps_s, SL_LT_DOWN_EXPS_S);
ROLE_AT(post_attn_norm, SL_LT_POST_ATTN_NORM);
ROLE_AT(post_ffw_norm, SL_LT_POST_FFW_NORM);
ROLE_AT(pre_ffw_norm_2, SL_LT_PRE_FFW_NORM_2);
ROLE_AT(post_ffw_norm_1, SL_LT_POST_FFW_NORM_1);
ROLE_AT(post_ffw_norm_2, SL_LT_POST_FFW_NORM_2);
ROLE_AT(router_s, SL_LT_ROUTER_S);
ROLE_AT(out_scale, SL_LT_OUT_SCALE);
ROLE_AT(gate_up_exps, SL_LT_GATE_UP_EXPS);
ROLE_AT(exp_probs_b, SL_LT_EXP_PROBS_B);
ROLE_AT(wq_a, SL_LT_WQ_A);
ROLE_AT(q_a_norm, SL_LT_Q_A_NORM);
ROLE_AT(wq_b, SL_LT_WQ_B);
ROLE_AT(wkv_a, SL_LT_WKV_A);
ROLE_AT(kv_a_norm, SL_LT_KV_A_NORM);
ROLE_AT(wk_b, SL_LT_WK_B);
ROLE_AT(wv_b, SL_LT_WV_B);
ROLE_AT(idx_k_norm, SL_LT_IDX_K_NORM);
ROLE_AT(idx_k_norm_b, SL_LT_IDX_K_NORM_B);
ROLE_AT(idx_proj, SL_LT_IDX_PROJ);
ROLE_AT(idx_k, SL_LT_IDX_K);
ROLE_AT(idx_q_b, SL_LT_IDX_Q_B);
ROLE_AT(hc_attn_fn, SL_LT_HC_ATTN_FN);
ROLE_AT(hc_attn_base, SL_LT_HC_ATTN_BASE);
ROLE_AT(hc_attn_scale, SL_LT_HC_ATTN_SCALE);
ROLE_AT(hc_ffn_fn, SL_LT_HC_FFN_FN);
ROLE_AT(hc_ffn_base, SL_LT_HC_FFN_BASE);
ROLE_AT(hc_ffn_scale, SL_LT_HC_FFN_SCALE);
ROLE_AT(wkv, SL_LT_WKV);
ROLE_AT(wo_a, SL_LT_WO_A);
ROLE_AT(wo_b, SL_LT_WO_B);
ROLE_AT(comp_kv, SL_LT_COMP_KV);
ROLE_AT(comp_gate, SL_LT_COMP_GATE);
ROLE_AT(comp_ape, SL_LT_COMP_APE);
ROLE_AT(comp_norm, SL_LT_COMP_NORM);
ROLE_AT(idx_comp_kv, SL_LT_IDX_COMP_KV);
ROLE_AT(idx_comp_gate, SL_LT_IDX_COMP_GATE);
ROLE_AT(idx_comp_ape, SL_LT_IDX_COMP_APE);
ROLE_AT(idx_comp_norm, SL_LT_IDX_COMP_NORM);
ROLE_AT(tid2eid, SL_LT_TID2EID);
_Static_assert(offsetof(sl_layer, d) == sizeof(sl_tensor) * SL_LT_COUNT,
               "every named tensor has a role");

const sl_lt_role *sl_layer_role(sl_ltensor r)
{
    return &roles[r];
}

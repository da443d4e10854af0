"""Monitoring: an alarm topic (`-c alarmEmail=...` subscribes an address), and alarms on dead letters, Lambda
errors and throttles."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from stacks.config import StackConfig

PERIOD = Duration.minutes(5)


class Monitoring(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: StackConfig,
        key: kms.IKey,
        dead_letters: sqs.IQueue,
        functions: dict[str, lambda_.IFunction],
    ) -> None:
        super().__init__(scope, construct_id)
        self.topic = sns.Topic(
            self, "Alarms", display_name=f"{config.name_prefix} alarms", master_key=key, enforce_ssl=True
        )
        if config.alarm_email:  # without a subscriber the alarms publish to no one
            self.topic.add_subscription(subscriptions.EmailSubscription(config.alarm_email))
        self.alarms: list[cloudwatch.Alarm] = []

        # anything in the DLQ is a transcript that could not be distilled: look at it
        self._alarm(
            "DeadLetters",
            dead_letters.metric_approximate_number_of_messages_visible(period=PERIOD, statistic="Maximum"),
            "A transcript could not be distilled after 3 attempts (see the distill logs for the reason).",
        )
        for name, fn in functions.items():
            self._alarm(
                f"{name}Errors", fn.metric_errors(period=PERIOD, statistic="Sum"), f"{name} Lambda errors"
            )
            self._alarm(
                f"{name}Throttles",
                fn.metric_throttles(period=PERIOD, statistic="Sum"),
                f"{name} Lambda throttles",
            )

    def _alarm(self, construct_id: str, metric: cloudwatch.IMetric, description: str) -> None:
        alarm = cloudwatch.Alarm(
            self,
            construct_id,
            metric=metric,
            threshold=0,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
            evaluation_periods=1,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            alarm_description=description,
        )
        alarm.add_alarm_action(actions.SnsAction(self.topic))
        self.alarms.append(alarm)
